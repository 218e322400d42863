package fenced

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

// Hooks are called by a Worker around each attempt it runs. Any field may be
// nil. They are set on the Client (Config.Hooks) and on a Worker
// (WorkerConfig.Hooks).
//
// For each attempt a Worker runs, in this order:
//
//  1. OnBegin of each Hooks: the Client's in order, then the Worker's.
//     Each gets the context the previous one returned.
//  2. The work middleware, outermost first: the Client's
//     (Config.WorkMiddleware), the Worker's (WorkerConfig.WorkMiddleware),
//     the kind's (Worker.Handle), then the handler. A panic anywhere in
//     this chain is recovered and becomes the attempt's error, a
//     *PanicError.
//  3. When the attempt is to be recorded as failed (an error that is not
//     a snooze, with the job neither cancelled, lost nor interrupted by
//     the worker stopping), OnError of each Hooks in the same order, until
//     one returns a non-nil *ErrorDecision.
//  4. The outcome's fenced write (or none, when the handler completed the
//     job itself or the attempt was lost).
//  5. OnEnd of each Hooks in the reverse order (the Worker's, then the
//     Client's, last first), with what became of the attempt.
//
// A hook that panics is recovered and logged (the Client's or Worker's
// Logger); the attempt goes on as if that hook had returned nothing. Hooks
// run on the attempt's goroutine: keep them short. They cannot end an
// attempt behind its fence: the only writes that end it are the fenced ones.
type Hooks struct {
	// OnBegin is called before the middleware and handler of each attempt,
	// with the attempt's context; the context it returns (nil: unchanged)
	// is the one the middleware, the handler, OnError and OnEnd get, and
	// it must be derived from ctx (the worker cancels ctx to tell the
	// handler to stop).
	OnBegin func(ctx context.Context, j *JobRun) context.Context
	// OnError is called when an attempt is to be recorded as failed, with
	// the error that failed it (a *PanicError for a panic). A nil result
	// leaves the failure as it is (retried while attempts remain); a
	// non-nil one decides instead.
	OnError func(ctx context.Context, j *JobRun, err error) *ErrorDecision
	// OnEnd is called once the attempt's outcome is settled, with what
	// became of it.
	OnEnd func(ctx context.Context, j *JobRun, end AttemptEnd)
}

// ErrorDecision is what an error handler (Hooks.OnError) makes of a failed
// attempt. The zero value records the failure as it is.
type ErrorDecision struct {
	// Discard fails the job for good (the dead letter) whatever attempts
	// remain.
	Discard bool
	// Snooze, when positive, puts the job back to run after it instead
	// of failing the attempt (which then does not count against
	// MaxAttempts). At most MaxRetryDelay. It takes precedence over
	// Discard.
	Snooze time.Duration
}

// AttemptEnd is what became of one attempt a Worker ran, as Hooks.OnEnd
// sees it.
type AttemptEnd struct {
	// Outcome is the attempt's outcome as its history records it
	// (OutcomeSucceeded, OutcomeRetry, OutcomeFailed, OutcomeSnoozed,
	// OutcomeCancelled), OutcomeLost when the attempt was no longer
	// current (another attempt, recovery or a delete took it: its outcome
	// write was refused or not made), or "" when the outcome could not be
	// written or read (WriteErr says why).
	Outcome string
	// Err is the error the handler (or its middleware, or an error
	// handler's decision) ended the attempt with; nil when it returned nil.
	Err error
	// WriteErr is why the worker's outcome write failed: a *StaleError
	// (its Reason says why the fence no longer held) or ErrNotFound when
	// it was refused; nil when the write held or none was needed.
	WriteErr error
	// Duration is how long the middleware and handler ran.
	Duration time.Duration
}

// The outcomes of an attempt, as its history (JobAttempt.Outcome) and
// AttemptEnd record them.
const (
	OutcomeSucceeded = fencedtype.OutcomeSucceeded
	OutcomeRetry     = fencedtype.OutcomeRetry     // failed, will run again
	OutcomeFailed    = fencedtype.OutcomeFailed    // failed, attempts exhausted or discarded
	OutcomeSnoozed   = fencedtype.OutcomeSnoozed   // put back to run later, attempt not counted
	OutcomeCancelled = fencedtype.OutcomeCancelled // ended by a cancel request
	OutcomeLost      = fencedtype.OutcomeLost      // no longer current: taken back or superseded
	OutcomeRunning   = fencedtype.OutcomeRunning   // the attempt in progress
)

// PanicError is the error of an attempt whose handler (or work middleware)
// panicked.
type PanicError struct {
	Value any    // what was passed to panic
	Stack string // the panicking goroutine's stack
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack) }

// attemptHooks are the hooks a Worker calls, in Hooks' order.
type attemptHooks struct {
	hooks []Hooks
	log   *slog.Logger
}

// begin calls every OnBegin, each with the context the previous returned.
func (h attemptHooks) begin(ctx context.Context, j *JobRun) context.Context {
	for _, hk := range h.hooks {
		if hk.OnBegin == nil {
			continue
		}
		h.guard(ctx, j, "OnBegin", func() {
			if c := hk.OnBegin(ctx, j); c != nil {
				ctx = c
			}
		})
	}
	return ctx
}

// decide calls OnError in order until one decides.
func (h attemptHooks) decide(ctx context.Context, j *JobRun, err error) *ErrorDecision {
	for _, hk := range h.hooks {
		if hk.OnError == nil {
			continue
		}
		var d *ErrorDecision
		h.guard(ctx, j, "OnError", func() { d = hk.OnError(ctx, j, err) })
		if d != nil {
			return d
		}
	}
	return nil
}

// end calls every OnEnd, last first.
func (h attemptHooks) end(ctx context.Context, j *JobRun, e AttemptEnd) {
	for i := len(h.hooks) - 1; i >= 0; i-- {
		if on := h.hooks[i].OnEnd; on != nil {
			h.guard(ctx, j, "OnEnd", func() { on(ctx, j, e) })
		}
	}
}

// guard runs one hook, logging and swallowing its panic.
func (h attemptHooks) guard(ctx context.Context, j *JobRun, name string, fn func()) {
	defer func() {
		if p := recover(); p != nil {
			h.log.LogAttrs(ctx, slog.LevelError, "fenced: a job hook panicked", slog.String("hook", name),
				slog.Int64("job", j.ID), slog.Int64("fence", j.Fence), slog.Any("panic", p),
				slog.String("stack", string(debug.Stack())))
		}
	}()
	fn()
}
