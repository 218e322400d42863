package fencedtest

import (
	"context"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// Worker runs jobs of one kind, one at a time, through the real path of a
// fenced.Worker: the claim that grants the attempt its fence, the
// heartbeats, the Client's and the Worker's middleware and hooks, the
// handler, and the fenced write of its outcome. Make it with NewWorker.
type Worker struct {
	c    *fenced.Client
	kind string
	h    fenced.Handler
	cfg  fenced.WorkerConfig
	opts fenced.KindOptions // the kind's policies (WithKindOptions)
}

// Result is what became of the one attempt Work ran.
type Result struct {
	// Job is the job as stored after the attempt: its State, Output,
	// LastError, Attempt and RunAt as the outcome left them.
	Job *fenced.Job
	// End is what the worker's end hooks saw (fenced.AttemptEnd): the
	// outcome recorded, the handler's error, the write's error.
	End fenced.AttemptEnd
}

// NewWorker returns a Worker running h for jobs of kind on c, with cfg
// (its Queues are replaced by the queue of each job Work runs; the rest is
// the fenced.Worker's configuration, zero for the defaults).
func NewWorker(t testing.TB, c *fenced.Client, kind string, h fenced.Handler, cfg fenced.WorkerConfig) *Worker {
	t.Helper()
	if kind == "" || h == nil {
		t.Fatalf("fencedtest: NewWorker needs a kind and a handler")
	}
	return &Worker{c: c, kind: kind, h: h, cfg: cfg}
}

// WithKindOptions registers the worker's handler with the kind's policies
// o (fenced.Worker.HandleWith: a timeout, a retry policy, max attempts,
// middleware) and returns w.
func (w *Worker) WithKindOptions(o fenced.KindOptions) *Worker {
	w.opts = o
	return w
}

// Work enqueues a job of the worker's kind with p (its Kind is set; with
// no Queue, a queue of its own, so that no other job is run) and runs one
// attempt of it, then returns what became of it. ctx bounds the wait
// (default a minute, when ctx has no deadline); the test fails if the
// attempt does not end within it. Jobs of the kind ahead of it in p.Queue
// are run first, for real: give them a queue of their own.
func (w *Worker) Work(ctx context.Context, t testing.TB, p fenced.EnqueueParams) *Result {
	t.Helper()
	p.Kind = w.kind
	if p.Queue == "" {
		p.Queue = "fencedtest-" + randomName()
	}
	j, _, err := w.c.Enqueue(ctx, p)
	if err != nil {
		t.Fatalf("fencedtest: enqueue the %s job: %v", w.kind, err)
	}
	return w.WorkJob(ctx, t, j)
}

// WorkJob runs one attempt of j, a job already enqueued (for example by the
// code under test: find it with RequireInserted), on j's queue; see Work.
// The worker stops once the attempt's outcome is written: an outcome that
// makes the job due at once again (a snooze of zero) may have its next
// attempt claimed before it stops, and run too.
func (w *Worker) WorkJob(ctx context.Context, t testing.TB, j *fenced.Job) *Result {
	t.Helper()
	if j.Kind != w.kind {
		t.Fatalf("fencedtest: job %d is of kind %q, the worker runs %q", j.ID, j.Kind, w.kind)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Minute)
		defer cancel()
	}
	ended := make(chan fenced.AttemptEnd, 1)
	cfg := w.cfg
	cfg.Queues = map[string]int{j.Queue: 1}
	cfg.Hooks = append(cfg.Hooks[:len(cfg.Hooks):len(cfg.Hooks)], fenced.Hooks{
		OnEnd: func(_ context.Context, r *fenced.JobRun, e fenced.AttemptEnd) {
			if r.ID == j.ID {
				select {
				case ended <- e:
				default:
				}
			}
		},
	})
	fw, err := w.c.NewWorker(cfg)
	if err != nil {
		t.Fatalf("fencedtest: worker: %v", err)
	}
	if err := fw.HandleWith(w.kind, w.h, w.opts); err != nil {
		t.Fatalf("fencedtest: handler: %v", err)
	}
	if err := fw.Start(ctx); err != nil {
		t.Fatalf("fencedtest: start the worker: %v", err)
	}
	var end fenced.AttemptEnd
	select {
	case end = <-ended:
	case <-ctx.Done():
		fw.Stop(context.Background())
		t.Fatalf("fencedtest: job %d (%s) did not end: %v", j.ID, w.kind, context.Cause(ctx))
	}
	if err := fw.Stop(ctx); err != nil {
		t.Fatalf("fencedtest: stop the worker: %v", err)
	}
	after, _, err := w.c.GetJob(ctx, j.ID)
	if err != nil {
		t.Fatalf("fencedtest: read job %d: %v", j.ID, err)
	}
	return &Result{Job: after, End: end}
}
