package fenced

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

// JobArgs is a job's arguments as a Go type that names its kind: the value
// is the job's args (marshalled as JSON), Kind its kind. Enqueue such a
// value with EnqueueArgs and register its handler with HandleKind, and the
// producer and the worker cannot disagree on the kind's string. Kind must
// return the same valid name for every value of the type, the zero value
// included (HandleKind reads it from the zero value): declare it on the
// value type, returning a constant.
type JobArgs interface {
	Kind() string
}

// JobArgsWithOptions is JobArgs whose type gives its jobs default enqueue
// options: EnqueueArgs starts from them, and the options given to it
// override them field by field.
type JobArgsWithOptions interface {
	JobArgs
	EnqueueOptions() EnqueueOptions
}

// EnqueueOptions are the options of a typed job: each field means what the
// field of the same name in EnqueueParams means. In EnqueueArgs a field's
// zero value means "not given": the type's default (JobArgsWithOptions)
// applies, then EnqueueParams' default. So a type whose default Priority is
// 5 cannot be enqueued at priority 0 through options; use ArgsParams and
// set the field of the EnqueueParams it returns.
type EnqueueOptions struct {
	Queue                    string
	Priority                 int
	RunAt                    time.Time
	Delay                    time.Duration
	MaxAttempts              int
	IdempotencyKey           string
	ConcurrencyKey           string
	SequenceKey              string
	SequenceContinueOnFailed bool
	Metadata                 any
	Timeout                  time.Duration
	Retry                    *Backoff
	Unique                   *UniqueOptions
	Tags                     []string
}

// override returns o with every non-zero field of by in place of its own.
func (o EnqueueOptions) override(by EnqueueOptions) EnqueueOptions {
	if by.Queue != "" {
		o.Queue = by.Queue
	}
	if by.Priority != 0 {
		o.Priority = by.Priority
	}
	if !by.RunAt.IsZero() {
		o.RunAt = by.RunAt
	}
	if by.Delay != 0 {
		o.Delay = by.Delay
	}
	if by.MaxAttempts != 0 {
		o.MaxAttempts = by.MaxAttempts
	}
	if by.IdempotencyKey != "" {
		o.IdempotencyKey = by.IdempotencyKey
	}
	if by.ConcurrencyKey != "" {
		o.ConcurrencyKey = by.ConcurrencyKey
	}
	if by.SequenceKey != "" {
		o.SequenceKey = by.SequenceKey
	}
	if by.SequenceContinueOnFailed {
		o.SequenceContinueOnFailed = true
	}
	if by.Metadata != nil {
		o.Metadata = by.Metadata
	}
	if by.Timeout != 0 {
		o.Timeout = by.Timeout
	}
	if by.Retry != nil {
		o.Retry = by.Retry
	}
	if by.Unique != nil {
		o.Unique = by.Unique
	}
	if by.Tags != nil {
		o.Tags = by.Tags
	}
	return o
}

// ArgsParams returns the EnqueueParams of a typed job: Kind is args.Kind(),
// Args is args, and the options are the type's defaults (when it
// implements JobArgsWithOptions) overridden by the non-zero fields of opts
// (which may be nil). Use it to enqueue typed jobs in a batch (EnqueueMany,
// EnqueueBulk). A nil args gives an *InvalidError.
func ArgsParams(args JobArgs, opts *EnqueueOptions) (EnqueueParams, error) {
	if isNil(args) {
		return EnqueueParams{}, fencedtype.Invalid("args", "is nil: give a value of a JobArgs type")
	}
	var o EnqueueOptions
	if d, ok := args.(JobArgsWithOptions); ok {
		o = d.EnqueueOptions()
	}
	if opts != nil {
		o = o.override(*opts)
	}
	return EnqueueParams{Kind: args.Kind(), Args: args, Queue: o.Queue, Priority: o.Priority,
		RunAt: o.RunAt, Delay: o.Delay, MaxAttempts: o.MaxAttempts, IdempotencyKey: o.IdempotencyKey,
		ConcurrencyKey: o.ConcurrencyKey, SequenceKey: o.SequenceKey,
		SequenceContinueOnFailed: o.SequenceContinueOnFailed, Metadata: o.Metadata,
		Timeout: o.Timeout, Retry: o.Retry, Unique: o.Unique, Tags: o.Tags}, nil
}

// EnqueueArgs enqueues a typed job (see ArgsParams for how its options are
// chosen), as Enqueue does.
func (c *Client) EnqueueArgs(ctx context.Context, args JobArgs, opts *EnqueueOptions) (job *Job, existing bool, err error) {
	return c.EnqueueArgsTx(ctx, nil, args, opts)
}

// EnqueueArgsTx enqueues a typed job inside the caller's transaction, as
// EnqueueTx does; a nil tx enqueues on its own, as EnqueueArgs.
func (c *Client) EnqueueArgsTx(ctx context.Context, tx Tx, args JobArgs, opts *EnqueueOptions) (job *Job, existing bool, err error) {
	p, err := ArgsParams(args, opts)
	if err != nil {
		return nil, false, err
	}
	res, err := c.EnqueueMany(ctx, tx, []EnqueueParams{p})
	if err != nil {
		return nil, false, err
	}
	return res[0].Job, res[0].Existing, nil
}

// HandleKind registers fn as the handler of T's kind on w: the kind is read
// from T's zero value (KindOf), and every job's args are decoded into a T
// as HandleArgs does (fields T does not declare are ignored). mw is the
// kind's work middleware, as in Handle. It returns the error Handle
// returns (a nil fn is one), or the error of KindOf.
func HandleKind[T JobArgs](w *Worker, fn func(ctx context.Context, j *JobRun, args T) error, mw ...WorkMiddleware) error {
	return HandleKindWith(w, fn, KindOptions{Middleware: mw})
}

// HandleKindWith registers fn as the handler of T's kind on w, as
// HandleKind does, with the kind's policies o (a timeout, a retry policy,
// max attempts, middleware: see KindOptions and Worker.HandleWith).
func HandleKindWith[T JobArgs](w *Worker, fn func(ctx context.Context, j *JobRun, args T) error, o KindOptions) error {
	kind, err := KindOf[T]()
	if err != nil {
		w.recordErr(err)
		return err
	}
	var h Handler // nil: refused by HandleWith as a nil handler
	if fn != nil {
		h = HandleArgs(fn)
	}
	return w.HandleWith(kind, h, o)
}

// KindOf returns the kind of T's zero value, as HandleKind registers it:
// an *InvalidError when it is not a valid name, or when Kind panics on the
// zero value (a Kind method on a pointer type, which a nil pointer cannot
// call: declare it on the value type).
func KindOf[T JobArgs]() (kind string, err error) {
	var zero T
	defer func() {
		if r := recover(); r != nil {
			err = fencedtype.Invalid("kind", "%s.Kind() panicked on the zero value (%v): declare Kind on the value type, returning a constant", reflect.TypeFor[T](), r)
		}
	}()
	kind = zero.Kind()
	if err := validName("kind", kind); err != nil {
		return "", fmt.Errorf("fenced: kind of %s: %w", reflect.TypeFor[T](), err)
	}
	return kind, nil
}

// isNil reports whether v is nil or a nil pointer, map, slice or func.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch r := reflect.ValueOf(v); r.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Interface:
		return r.IsNil()
	}
	return false
}
