package fenced

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

// Handler runs one attempt of a job. Its context ends when the job is asked
// to cancel, when its lease is lost (another attempt may be running: stop,
// your writes would be refused anyway), or when the worker stops;
// context.Cause tells which.
//
// Returning nil completes the job (with the output set by SetOutput).
// Returning Snooze(d) puts it back to run after d without counting the
// attempt; Discard(err) fails it for good (the dead letter); any other error
// fails the attempt and retries after the retry policy's delay (the job's,
// the kind's or the worker's backoff) until MaxAttempts. With a timeout
// (KindOptions.Timeout), the context also ends at it, cause ErrJobTimeout.
// A panic is recorded as a failed attempt.
type Handler func(ctx context.Context, j *JobRun) error

// JobRun is a running attempt as its handler sees it.
type JobRun struct {
	*Job
	c      *Client
	output any

	mu        sync.Mutex
	open      []*runTx   // the handler's Tx transactions in progress
	completed completion // what became of its CompleteTx calls (the furthest)
	txErr     error      // why a Tx that completed the job did not commit

	policy attemptPolicy // the attempt's timeout, retry and max attempts
}

// runTx is one of the handler's Tx transactions.
type runTx struct {
	tx        Tx
	completed bool // CompleteTx succeeded inside it
}

// completion is what became of a handler's CompleteTx calls, from least to
// most settled.
type completion int

const (
	notCompleted         completion = iota
	completionRolledBack            // inside a Tx that did not commit
	completionUnseen                // inside a transaction of the caller's: its commit is not seen
	completionCommitted             // inside a Tx that committed, or with no transaction
)

// SetOutput sets the output stored when the handler returns nil. It must
// be JSON-encodable.
func (r *JobRun) SetOutput(v any) { r.output = v }

// Progress reports the attempt's progress; it is a guarded write, so a stale
// attempt gets a *StaleError.
func (r *JobRun) Progress(ctx context.Context, p Progress) error {
	_, err := r.c.ReportProgress(ctx, r.Ref(), p)
	return err
}

// Tx runs fn in a transaction that commits only under this attempt (see
// Client.JobTx).
func (r *JobRun) Tx(ctx context.Context, fn func(Tx) error) error {
	rt := &runTx{}
	err := r.c.JobTx(ctx, r.Ref(), func(tx Tx) error {
		r.mu.Lock()
		rt.tx = tx
		r.open = append(r.open, rt)
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.open = slices.DeleteFunc(r.open, func(o *runTx) bool { return o == rt })
			r.mu.Unlock()
		}()
		return fn(tx)
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	if rt.completed {
		if err == nil {
			r.completed = max(r.completed, completionCommitted)
		} else {
			r.completed = max(r.completed, completionRolledBack)
			r.txErr = err
		}
	}
	return err
}

// CompleteTx completes the job inside tx with output, so the job succeeds
// exactly when the caller's business writes commit. After it the handler
// should return nil (or the error that rolled tx back). The worker writes
// no completion of its own then, and counts the job succeeded when the
// completion committed: at once for a transaction of Tx, through a read of
// the attempt for a transaction of the caller's. A handler that returns nil
// though the transaction holding its completion did not commit fails the
// attempt (it is retried).
func (r *JobRun) CompleteTx(ctx context.Context, tx Tx, output any) error {
	if err := r.c.CompleteJobTx(ctx, tx, r.Ref(), output); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch i := slices.IndexFunc(r.open, func(o *runTx) bool { return sameTx(o.tx, tx) }); {
	case tx == nil: // completed by itself, committed
		r.completed = max(r.completed, completionCommitted)
	case i >= 0:
		r.open[i].completed = true // settled when that Tx ends
	default:
		r.completed = max(r.completed, completionUnseen)
	}
	return nil
}

// completion reports what became of the handler's CompleteTx calls, and
// why a Tx that completed the job did not commit.
func (r *JobRun) completion() (completion, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.completed, r.txErr
}

// sameTx reports whether a and b are the same transaction, without
// comparing values of a type that cannot be compared.
func sameTx(a, b Tx) bool {
	t := reflect.TypeOf(a)
	return t != nil && t == reflect.TypeOf(b) && t.Comparable() && a == b
}

// snoozeError asks for a snooze.
type snoozeError struct{ d time.Duration }

func (e *snoozeError) Error() string { return fmt.Sprintf("snooze %s", e.d) }

// Snooze returns an error that, returned by a handler, puts the job back to
// queued to run after d; the attempt does not count against MaxAttempts.
func Snooze(d time.Duration) error { return &snoozeError{d} }

// discardError marks a failure as final.
type discardError struct{ err error }

func (e *discardError) Error() string { return e.err.Error() }
func (e *discardError) Unwrap() error { return e.err }

// Discard returns an error that, returned by a handler, fails the job for
// good whatever attempts remain.
func Discard(err error) error { return &discardError{err} }

// Causes of a handler's context ending.
var (
	// ErrJobCancelled: the job was asked to cancel.
	ErrJobCancelled = errors.New("job cancel requested")
	// ErrJobLost: the attempt's lease was lost; another attempt may run.
	ErrJobLost = errors.New("job lease lost")
	// ErrWorkerStopping: the worker is stopping and its grace period ended.
	ErrWorkerStopping = errors.New("worker stopping")
	// ErrJobTimeout: the attempt's timeout passed (EnqueueParams.Timeout,
	// KindOptions.Timeout, WorkerConfig.Timeout). The attempt fails with an
	// error matching it ("job timed out after 5s") and is retried.
	ErrJobTimeout = errors.New("job timed out")
)

// HandleArgs adapts a handler of typed arguments: the job's JSON args are
// decoded into a T. Fields of the args that T does not declare are ignored,
// so a producer may add an optional field before its workers know it
// (StrictArgs refuses them instead). Args that do not decode fail the
// attempt with an error naming the job's kind and the decoding error; the
// job is retried as after any failure (a redeployed worker may decode it)
// and dead-lettered once its attempts are used up.
func HandleArgs[T any](fn func(ctx context.Context, j *JobRun, args T) error, opts ...ArgsOption) Handler {
	var d argsDecoding
	for _, o := range opts {
		o(&d)
	}
	return func(ctx context.Context, j *JobRun) error {
		var args T
		if err := d.decode(j.Args, &args); err != nil {
			return fmt.Errorf("decode args of %s job: %w", j.Kind, err)
		}
		return fn(ctx, j, args)
	}
}

// ArgsOption changes how HandleArgs decodes a job's args.
type ArgsOption func(*argsDecoding)

// StrictArgs makes HandleArgs refuse args with a field the type does not
// declare: the attempt fails with a "json: unknown field" error.
func StrictArgs() ArgsOption { return func(d *argsDecoding) { d.strict = true } }

type argsDecoding struct{ strict bool }

func (d argsDecoding) decode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if d.strict {
		dec.DisallowUnknownFields()
	}
	return dec.Decode(v)
}

// outcome turns a handler's return into the attempt's final write.
// lost says the database already reported the attempt superseded; an
// ErrJobLost cause without it is a local trust window that ran out, and the
// outcome is still written (the fence refuses it if the attempt did lose).
// A completion the handler made itself (CompleteTx) is settled before this.
func (w *Worker) outcome(ctx context.Context, r *JobRun, err error, lost bool) (JobEnd, bool) {
	end := JobEnd{Ref: r.Ref()}
	var snooze *snoozeError
	var discard *discardError
	completed, _ := r.completion()
	switch {
	case context.Cause(ctx) == ErrJobLost && lost || errors.Is(err, fencedtype.ErrStale) && completed != notCompleted:
		return end, false // not ours to write any more
	case err == nil:
		out, jerr := jsonArg("output", r.output, nil)
		if jerr != nil {
			end.Kind, end.Error, end.Discard = EndFail, jerr.Error(), true
			return end, true
		}
		end.Kind, end.Output = EndComplete, out
	case errors.As(err, &snooze):
		end.Kind, end.Delay = EndSnooze, min(max(snooze.d, 0), MaxRetryDelay)
	case context.Cause(ctx) == ErrJobCancelled:
		end.Kind, end.Error = EndCancel, err.Error()
	case context.Cause(ctx) == ErrWorkerStopping:
		end.Kind = EndSnooze // interrupted by shutdown: run again soon, attempt not counted
	default:
		d := w.hooks.decide(ctx, r, err) // the error handlers (Hooks.OnError)
		if d != nil && d.Snooze > 0 {
			end.Kind, end.Delay = EndSnooze, min(d.Snooze, MaxRetryDelay)
			return end, true
		}
		end.Kind, end.Error = EndFail, err.Error()
		end.Discard = errors.As(err, &discard) || d != nil && d.Discard ||
			r.Attempt >= r.policy.maxAttempts && r.policy.maxAttempts < r.MaxAttempts // the kind's is lower
		w.retryEnd(ctx, &end, r, err)
	}
	return end, true
}
