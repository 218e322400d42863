package fenced

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

// MaxJobTimeout is the longest attempt timeout (of a job, a kind or a
// worker).
const MaxJobTimeout = MaxRetryDelay

// DefaultTimeoutGrace is how long a worker waits, by default, for a handler
// that ignores its timed-out context before it ends the attempt itself
// (WorkerConfig.TimeoutGrace).
const DefaultTimeoutGrace = 10 * time.Second

// RetryPolicy decides how long a job waits to run again after a failed
// attempt: NextRetry is given the job (j.Attempt is the attempt that
// failed, counted from 1) and the attempt's error, and returns the delay
// (below zero is 0, above MaxRetryDelay is MaxRetryDelay).
//
// A Backoff is a RetryPolicy, and a worker gives it to the database, which
// computes the delay (with its jitter) from the attempt number on the
// job's row in the statement that records the failure. Any other policy's
// delay is computed in Go from the attempt number the fenced claim
// returned, and the same statement sets run_at to the database's now plus
// that delay: the clock is always the database's; only the length of the
// wait is the policy's (docs/design.md §6.15).
type RetryPolicy interface {
	NextRetry(j *Job, err error) time.Duration
}

// RetryFunc is a function used as a RetryPolicy.
type RetryFunc func(j *Job, err error) time.Duration

// NextRetry calls f.
func (f RetryFunc) NextRetry(j *Job, err error) time.Duration { return f(j, err) }

// KindOptions are the policies of one kind's jobs on a worker
// (Worker.HandleWith). The zero value is the worker's defaults. A job's own
// policies, given at enqueue (EnqueueParams.Timeout, EnqueueParams.Retry),
// come first, then the kind's, then the worker's (WorkerConfig.Timeout,
// WorkerConfig.Backoff).
type KindOptions struct {
	// Timeout bounds each attempt of the kind: the handler's context ends
	// at it with cause ErrJobTimeout, and the attempt fails with an error
	// saying it timed out after Timeout (whatever the handler returns,
	// unless its completion committed before the deadline) and is retried
	// as any failure. The lease is renewed until the attempt ends. A
	// handler that has not returned TimeoutGrace after the deadline is
	// abandoned: the worker records the failure itself (see
	// WorkerConfig.TimeoutGrace). Zero means the worker's
	// (WorkerConfig.Timeout); otherwise 1ms to MaxJobTimeout.
	Timeout time.Duration
	// Retry is the delay after a failed attempt of the kind. Nil means the
	// worker's Backoff.
	Retry RetryPolicy
	// MaxAttempts caps the attempts of the kind's jobs: an attempt whose
	// number reaches the lower of the job's MaxAttempts and this one ends
	// in the dead letter when it fails (the lower wins). The attempt
	// number counts snoozed attempts too (a snooze raises only the job's
	// own MaxAttempts). Zero means the job's alone; otherwise 1 to
	// MaxAttemptsLimit.
	MaxAttempts int
	// Middleware wraps the kind's handler, the first outermost, inside the
	// Client's and the Worker's work middleware (see Hooks).
	Middleware []WorkMiddleware
}

// validate checks the options of kind.
func (o KindOptions) validate() error {
	if err := validTimeout("timeout", o.Timeout); err != nil {
		return err
	}
	if o.MaxAttempts < 0 || o.MaxAttempts > MaxAttemptsLimit {
		return fencedtype.Invalid("max_attempts", "%d is outside 1 to %d (0 for the job's)", o.MaxAttempts, MaxAttemptsLimit)
	}
	if b, ok := o.Retry.(*Backoff); ok && b == nil {
		return fencedtype.Invalid("retry", "is a nil *Backoff")
	}
	return nil
}

// validTimeout checks an attempt timeout: 0 for none, else 1ms to
// MaxJobTimeout.
func validTimeout(field string, d time.Duration) error {
	if d != 0 && (d < time.Millisecond || d > MaxJobTimeout) {
		return fencedtype.Invalid(field, "%s is outside 1ms to %s (0 for none)", d, MaxJobTimeout)
	}
	return nil
}

// HandleWith registers the handler of a kind with the kind's policies (see
// KindOptions), as Handle does: call it before Start; an invalid kind, a
// nil handler, a kind registered already, invalid options (an
// *InvalidError naming the field) and a call after Start are errors, the
// registration is not made, and Start refuses to start with the first such
// error.
func (w *Worker) HandleWith(kind string, h Handler, o KindOptions) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var err error
	switch {
	case w.started:
		err = fmt.Errorf("fenced: Handle(%q) after Start", kind)
	case validName("kind", kind) != nil:
		err = fmt.Errorf("fenced: Handle: %w", validName("kind", kind))
	case h == nil:
		err = fmt.Errorf("fenced: the handler of kind %q is nil", kind)
	case w.handlers[kind] != nil:
		err = fmt.Errorf("fenced: kind %q has a handler already: registering it twice would replace one silently", kind)
	case o.validate() != nil:
		err = fmt.Errorf("fenced: the options of kind %q: %w", kind, o.validate())
	}
	if err != nil {
		if w.regErr == nil && !w.started {
			w.regErr = err
		}
		return err
	}
	w.register(kind, h, o)
	return nil
}

// register stores the handler of kind and its options; w.mu is held.
func (w *Worker) register(kind string, h Handler, o KindOptions) {
	w.handlers[kind] = wrapHandler(h, slices.Concat(w.c.workMW, w.cfg.WorkMiddleware, o.Middleware)...)
	o.Middleware = nil // wrapped in already
	w.kindOpts[kind] = o
}

// attemptPolicy is what applies to one attempt: the job's own policies,
// else its kind's, else the worker's.
type attemptPolicy struct {
	timeout     time.Duration
	retry       RetryPolicy // a Backoff is computed by the database
	maxAttempts int         // the lower of the job's and the kind's
}

// policyOf resolves the policies of an attempt of j, whose kind's options
// are o.
func (w *Worker) policyOf(j *Job, o KindOptions) attemptPolicy {
	p := attemptPolicy{timeout: w.cfg.Timeout, retry: w.cfg.Backoff, maxAttempts: j.MaxAttempts}
	switch {
	case j.Timeout > 0:
		p.timeout = j.Timeout
	case o.Timeout > 0:
		p.timeout = o.Timeout
	}
	switch {
	case j.Retry != nil:
		p.retry = j.Retry.Restored()
	case o.Retry != nil:
		p.retry = o.Retry
	}
	if o.MaxAttempts > 0 {
		p.maxAttempts = min(p.maxAttempts, o.MaxAttempts)
	}
	return p
}

// retryEnd sets the retry of a failed attempt on end: a Backoff for the
// database to compute, or the delay a custom policy gives, added by the
// database to its now in the statement that records the failure.
func (w *Worker) retryEnd(ctx context.Context, end *JobEnd, r *JobRun, err error) {
	switch b := r.policy.retry.(type) {
	case Backoff:
		end.Backoff = &b
		return
	case *Backoff:
		c := *b
		end.Backoff = &c
		return
	}
	if end.Discard || r.Attempt >= r.policy.maxAttempts {
		return // the dead letter: no retry to compute
	}
	d, perr := nextRetry(r.policy.retry, r.Job, err)
	if perr != nil {
		w.log.WarnContext(ctx, "fenced: the retry policy panicked; retrying after the worker's backoff",
			"job", r.ID, "kind", r.Kind, "err", perr)
		b := w.cfg.Backoff
		end.Backoff = &b
		return
	}
	end.Delay = min(max(d, 0), MaxRetryDelay)
}

// nextRetry calls p, turning a panic into an error.
func nextRetry(p RetryPolicy, j *Job, err error) (d time.Duration, perr error) {
	defer func() {
		if v := recover(); v != nil {
			perr = fmt.Errorf("panic: %v", v)
		}
	}()
	jc := *j // the policy cannot change the running attempt's job
	return p.NextRetry(&jc, err), nil
}

// timedOut is the error of an attempt whose timeout passed.
func timedOut(d time.Duration) error { return fmt.Errorf("%w after %s", ErrJobTimeout, d) }

// timedCall is how a handler run with a timeout ended.
type timedCall struct {
	err error
	// timedOut: the timeout had passed when the handler returned (or
	// was abandoned); a handler that returned before it did not time out.
	timedOut  bool
	abandoned bool // still running TimeoutGrace after the timeout
}

// callTimed runs the handler of an attempt with a timeout (the handler's
// context, hctx, ends at it with cause ErrJobTimeout). A handler that has
// not returned TimeoutGrace after its timeout passed is abandoned: callTimed
// returns while it still runs, and the worker records the failure through
// the attempt's fence and stops renewing its lease, so the handler's later
// writes are refused as stale.
func (w *Worker) callTimed(hctx context.Context, h Handler, r *JobRun) timedCall {
	done := make(chan timedCall, 1)
	go func() {
		err := callHandler(hctx, h, r)
		done <- timedCall{err: err, timedOut: context.Cause(hctx) == ErrJobTimeout}
	}()
	select {
	case c := <-done:
		return c
	case <-hctx.Done():
	}
	if context.Cause(hctx) != ErrJobTimeout {
		return <-done // lost, cancelled or stopping: as without a timeout
	}
	grace := time.NewTimer(w.cfg.TimeoutGrace)
	defer grace.Stop()
	select {
	case c := <-done:
		return c
	case <-grace.C:
		w.log.Warn("fenced: a handler ignored its timeout; the worker ends its attempt and abandons it",
			"job", r.ID, "kind", r.Kind, "fence", r.Fence, "timeout", r.policy.timeout, "grace", w.cfg.TimeoutGrace)
		return timedCall{timedOut: true, abandoned: true}
	}
}
