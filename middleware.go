package fenced

import (
	"context"
)

// EnqueueBatch is one enqueue call as enqueue middleware sees it: Enqueue
// and EnqueueTx make a batch of one job, EnqueueMany and EnqueueBulk a batch
// of the jobs given.
type EnqueueBatch struct {
	// Jobs are the jobs to enqueue, in order: a copy of the caller's
	// parameters, which middleware may change in place (set Metadata, a
	// queue, a priority) before calling next. They are validated after the
	// last middleware, so what middleware sets is checked like the rest.
	Jobs []EnqueueParams
	// Tx is the caller's transaction (EnqueueTx, or EnqueueMany and
	// EnqueueBulk with one), nil for a standalone enqueue. Middleware must
	// not commit or roll it back.
	Tx Tx
	// Bulk: the call is EnqueueBulk, which reads no job back; the
	// answer's Results are nil, only Inserted is set.
	Bulk bool
}

// Enqueued is what an enqueue call wrote.
type Enqueued struct {
	// Results are the batch's jobs, in the order of EnqueueBatch.Jobs,
	// each the inserted job or the existing one its idempotency key
	// matched; nil for a bulk enqueue.
	Results []EnqueueResult
	// Inserted counts the jobs inserted (not matched to an existing job by
	// their idempotency key).
	Inserted int
}

// EnqueueMiddleware wraps every enqueue of the Client it is configured on
// (Config.EnqueueMiddleware): Enqueue, EnqueueTx, EnqueueMany, EnqueueBulk,
// and the Maintainer's periodic jobs. It may change b.Jobs, then calls next
// to go on to the next middleware and, after the last, to validation and
// the insert; it may also refuse the batch by returning an error without
// calling next (nothing is written). next returns what the insert wrote:
// with a Tx, the jobs exist only if that transaction commits.
type EnqueueMiddleware func(ctx context.Context, b *EnqueueBatch, next func(context.Context) (Enqueued, error)) (Enqueued, error)

// WorkMiddleware wraps the handler of each attempt: it runs around the
// handler (and the middleware inside it), with the attempt's context, and
// returns what the handler returned or an error of its own, which decides
// the attempt's outcome as a handler's return does (see Handler). It must
// call next at most once: not calling it skips the handler. It cannot end
// the attempt by itself except through the fenced writes every handler has
// (JobRun.CompleteTx, the Client's EndJob with the attempt's ref), which are
// refused once the attempt is no longer current.
//
// Work middleware is set on the Client (Config.WorkMiddleware), on a Worker
// (WorkerConfig.WorkMiddleware) and per kind (Worker.Handle); see Hooks for
// the order everything runs in.
type WorkMiddleware func(ctx context.Context, j *JobRun, next func(context.Context) error) error

// wrapHandler returns h inside mw: mw[0] outermost, then mw[1], and so on.
// A nil h stays nil (the worker reports a kind without a handler).
func wrapHandler(h Handler, mw ...WorkMiddleware) Handler {
	if h == nil {
		return nil
	}
	for i := len(mw) - 1; i >= 0; i-- {
		m, inner := mw[i], h
		if m == nil {
			continue
		}
		h = func(ctx context.Context, j *JobRun) error {
			return m(ctx, j, func(ctx context.Context) error { return inner(ctx, j) })
		}
	}
	return h
}

// enqueue runs b through the Client's enqueue middleware, then last.
func (c *Client) enqueue(ctx context.Context, b *EnqueueBatch, last func(context.Context, *EnqueueBatch) (Enqueued, error)) (Enqueued, error) {
	var step func(i int) func(context.Context) (Enqueued, error)
	step = func(i int) func(context.Context) (Enqueued, error) {
		return func(ctx context.Context) (Enqueued, error) {
			for ; i < len(c.enqueueMW); i++ {
				if m := c.enqueueMW[i]; m != nil {
					return m(ctx, b, step(i+1))
				}
			}
			return last(ctx, b)
		}
	}
	return step(0)(ctx)
}
