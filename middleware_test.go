package fenced_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/test/logbuf"

	"github.com/fenced/fenced"
)

// hookClient opens a migrated Client on a fresh SQLite file with cfg.
func hookClient(t *testing.T, cfg fenced.Config) *fenced.Client {
	t.Helper()
	ctx := context.Background()
	c, err := fenced.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "hooks.db"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitFor polls job id until cond holds on it, failing the test after a
// generous deadline.
func waitFor(t *testing.T, c *fenced.Client, id int64, what string, cond func(*fenced.Job) bool) *fenced.Job {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		j, _, err := c.GetJob(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if cond(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d: %s never happened; state %s attempt %d", id, what, j.State, j.Attempt)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// recorder keeps the order things ran in.
type recorder struct {
	mu    sync.Mutex
	steps []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, s)
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.steps)
}

func (r *recorder) mw(name string) fenced.WorkMiddleware {
	return func(ctx context.Context, j *fenced.JobRun, next func(context.Context) error) error {
		r.add(name + ">")
		err := next(ctx)
		r.add("<" + name)
		return err
	}
}

func (r *recorder) hooks(name string) fenced.Hooks {
	return fenced.Hooks{
		OnBegin: func(ctx context.Context, j *fenced.JobRun) context.Context {
			r.add("begin " + name)
			return ctx
		},
		OnEnd: func(ctx context.Context, j *fenced.JobRun, e fenced.AttemptEnd) {
			r.add("end " + name + " " + e.Outcome)
		},
	}
}

// Work middleware runs client's, worker's, kind's, outermost first; begin
// hooks run client's then worker's before it, end hooks in the reverse
// order after the outcome is written.
func TestWorkMiddlewareAndHooksRunInTheDocumentedOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := &recorder{}
	c := hookClient(t, fenced.Config{WorkMiddleware: []fenced.WorkMiddleware{rec.mw("client")},
		Hooks: []fenced.Hooks{rec.hooks("client")}})
	w, err := c.NewWorker(fenced.WorkerConfig{Owner: "w", WorkMiddleware: []fenced.WorkMiddleware{rec.mw("worker")},
		Hooks: []fenced.Hooks{rec.hooks("worker")}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	w.Handle("k", func(context.Context, *fenced.JobRun) error { rec.add("handler"); return nil }, rec.mw("kind1"), rec.mw("kind2"))
	j, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	go func() {
		for !slices.Contains(rec.get(), "end client succeeded") {
			time.Sleep(5 * time.Millisecond)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the hooks did not all run: %v", rec.get())
	}
	w.Stop(ctx)
	want := []string{"begin client", "begin worker", "client>", "worker>", "kind1>", "kind2>", "handler",
		"<kind2", "<kind1", "<worker", "<client", "end worker succeeded", "end client succeeded"}
	if got := rec.get(); !slices.Equal(got, want) {
		t.Fatalf("order:\n got %v\nwant %v", got, want)
	}
	if got := waitFor(t, c, j.ID, "success", func(j *fenced.Job) bool { return j.State == fenced.JobSucceeded }); got.Attempt != 1 {
		t.Fatalf("attempt %d", got.Attempt)
	}
}

// Enqueue middleware sees every enqueue path's jobs and may change them
// (what it sets is validated like the rest), or refuse the batch.
func TestEnqueueMiddlewareSeesAndChangesEveryPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	var seen []string
	c := hookClient(t, fenced.Config{EnqueueMiddleware: []fenced.EnqueueMiddleware{
		func(ctx context.Context, b *fenced.EnqueueBatch, next func(context.Context) (fenced.Enqueued, error)) (fenced.Enqueued, error) {
			mu.Lock()
			seen = append(seen, strings.Repeat("b", len(b.Jobs))+map[bool]string{true: " bulk", false: ""}[b.Bulk]+
				map[bool]string{true: " tx", false: ""}[b.Tx != nil])
			mu.Unlock()
			for i := range b.Jobs {
				if b.Jobs[i].Kind == "refused" {
					return fenced.Enqueued{}, errors.New("refused by middleware")
				}
				b.Jobs[i].Queue = "moved"
				b.Jobs[i].Priority = 7
			}
			out, err := next(ctx)
			if err == nil && !b.Bulk && len(out.Results) != len(b.Jobs) {
				t.Errorf("next returned %d results for %d jobs", len(out.Results), len(b.Jobs))
			}
			return out, err
		},
		func(ctx context.Context, b *fenced.EnqueueBatch, next func(context.Context) (fenced.Enqueued, error)) (fenced.Enqueued, error) {
			for i := range b.Jobs { // the inner middleware sees the outer's changes
				if b.Jobs[i].Queue != "moved" {
					t.Errorf("inner middleware saw queue %q", b.Jobs[i].Queue)
				}
			}
			return next(ctx)
		},
	}})
	caller := []fenced.EnqueueParams{{Kind: "a"}, {Kind: "b"}}
	if _, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "one"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EnqueueMany(ctx, nil, caller); err != nil {
		t.Fatal(err)
	}
	if caller[0].Queue != "" {
		t.Fatalf("middleware changed the caller's slice: %+v", caller[0])
	}
	if n, err := c.EnqueueBulk(ctx, nil, caller); err != nil || n != 2 {
		t.Fatalf("EnqueueBulk: %d, %v", n, err)
	}
	err := c.LeaseTx(ctx, mustLease(t, c), func(tx fenced.Tx) error {
		_, _, err := c.EnqueueTx(ctx, tx, fenced.EnqueueParams{Kind: "in-tx"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "refused"}); err == nil || !strings.Contains(err.Error(), "refused by middleware") {
		t.Fatalf("refused enqueue: %v", err)
	}
	jobs, err := c.ListJobs(ctx, fenced.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 6 {
		t.Fatalf("%d jobs, want 6 (the refused one not written)", len(jobs))
	}
	for _, j := range jobs {
		if j.Queue != "moved" || j.Priority != 7 {
			t.Errorf("job %d (%s): queue %q priority %d", j.ID, j.Kind, j.Queue, j.Priority)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"b", "bb", "bb bulk", "b tx", "b"}; !slices.Equal(seen, want) {
		t.Fatalf("middleware saw %q, want %q", seen, want)
	}

	// What middleware sets is validated.
	bad := hookClient(t, fenced.Config{EnqueueMiddleware: []fenced.EnqueueMiddleware{
		func(ctx context.Context, b *fenced.EnqueueBatch, next func(context.Context) (fenced.Enqueued, error)) (fenced.Enqueued, error) {
			b.Jobs[0].Queue = "not a queue!"
			return next(ctx)
		}}})
	if _, _, err := bad.Enqueue(ctx, fenced.EnqueueParams{Kind: "x"}); !errors.Is(err, fenced.ErrInvalid) {
		t.Fatalf("invalid queue set by middleware: %v", err)
	}
}

// newTextLogger logs text lines to w.
func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// mustLease acquires a lease for a test's fenced transaction.
func mustLease(t *testing.T, c *fenced.Client) fenced.Lease {
	t.Helper()
	l, err := c.AcquireLease(context.Background(), "hooks-test", "me", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return *l
}

// Hooks that panic do not take the worker down: every job is still worked
// and its outcome written, and the later hooks still run.
func TestPanickingHooksDoNotStopTheWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	var ends []string
	panicky := fenced.Hooks{
		OnBegin: func(context.Context, *fenced.JobRun) context.Context { panic("begin") },
		OnError: func(context.Context, *fenced.JobRun, error) *fenced.ErrorDecision { panic("error") },
		OnEnd:   func(context.Context, *fenced.JobRun, fenced.AttemptEnd) { panic("end") },
	}
	after := fenced.Hooks{OnEnd: func(_ context.Context, j *fenced.JobRun, e fenced.AttemptEnd) {
		mu.Lock()
		defer mu.Unlock()
		ends = append(ends, j.Kind+" "+e.Outcome)
	}}
	var logged logbuf.Buffer
	c := hookClient(t, fenced.Config{Hooks: []fenced.Hooks{after, panicky}, Logger: newTextLogger(&logged)})
	w, err := c.NewWorker(fenced.WorkerConfig{Owner: "w"})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("ok", func(context.Context, *fenced.JobRun) error { return nil })
	w.Handle("fails", func(context.Context, *fenced.JobRun) error { return errors.New("boom") })
	ok, _, _ := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "ok"})
	fails, _, _ := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "fails", MaxAttempts: 1})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctx)
	waitFor(t, c, ok.ID, "success", func(j *fenced.Job) bool { return j.State == fenced.JobSucceeded })
	waitFor(t, c, fails.ID, "dead letter", func(j *fenced.Job) bool { return j.State == fenced.JobFailed })
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		got := slices.Sorted(slices.Values(ends))
		mu.Unlock()
		if slices.Equal(got, []string{"fails failed", "ok succeeded"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("end hooks after the panicking one saw %v", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, hook := range []string{"hook=OnBegin", "hook=OnError", "hook=OnEnd"} {
		if !strings.Contains(logged.String(), hook) {
			t.Errorf("the panic of %s was not logged", hook)
		}
	}
}

// The error handler sees a handler's panic as a *PanicError and may discard
// the job or snooze it instead of retrying.
func TestErrorHandlerDiscardsOrSnoozes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	var panics int
	c := hookClient(t, fenced.Config{Hooks: []fenced.Hooks{{
		OnError: func(_ context.Context, j *fenced.JobRun, err error) *fenced.ErrorDecision {
			var p *fenced.PanicError
			if errors.As(err, &p) {
				mu.Lock()
				panics++
				mu.Unlock()
				if p.Value != "kaput" || !strings.Contains(p.Stack, "goroutine") {
					t.Errorf("panic error %v", p.Value)
				}
			}
			switch j.Kind {
			case "discard":
				return &fenced.ErrorDecision{Discard: true}
			case "snooze":
				return &fenced.ErrorDecision{Snooze: time.Hour}
			}
			return nil
		}}}})
	w, err := c.NewWorker(fenced.WorkerConfig{Owner: "w"})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("discard", func(context.Context, *fenced.JobRun) error { panic("kaput") })
	w.Handle("snooze", func(context.Context, *fenced.JobRun) error { return errors.New("later") })
	w.Handle("retry", func(context.Context, *fenced.JobRun) error { return errors.New("again") })
	discard, _, _ := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "discard", MaxAttempts: 5})
	snooze, _, _ := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "snooze", MaxAttempts: 5})
	retry, _, _ := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "retry", MaxAttempts: 5})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctx)
	d := waitFor(t, c, discard.ID, "discard", func(j *fenced.Job) bool { return j.State == fenced.JobFailed })
	if d.Attempt != 1 || !strings.Contains(d.LastError, "panic: kaput") {
		t.Fatalf("discarded job: attempt %d, error %q", d.Attempt, d.LastError)
	}
	s := waitFor(t, c, snooze.ID, "snooze", func(j *fenced.Job) bool { return j.State == fenced.JobQueued && j.Attempt == 1 })
	if time.Until(s.RunAt) < 50*time.Minute {
		t.Fatalf("snoozed job runs at %s, want about an hour from now", s.RunAt)
	}
	_, attempts, err := c.GetJob(ctx, snooze.ID)
	if err != nil || len(attempts) != 1 || attempts[0].Outcome != fenced.OutcomeSnoozed {
		t.Fatalf("snoozed job's history: %+v, %v", attempts, err)
	}
	waitFor(t, c, retry.ID, "a retry", func(j *fenced.Job) bool { return j.Attempt >= 1 && j.State == fenced.JobQueued })
	_, attempts, err = c.GetJob(ctx, retry.ID)
	if err != nil || len(attempts) < 1 || attempts[0].Outcome != fenced.OutcomeRetry {
		t.Fatalf("undecided failure's history: %+v, %v", attempts, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if panics != 1 {
		t.Fatalf("the error handler saw %d panics, want 1", panics)
	}
}
