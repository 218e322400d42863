package drivertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runWorkerStats: a worker counts every outcome written for its attempts,
// whichever path wrote it — its own outcome write, the handler's completion
// in its job-fenced transaction (the pattern the README recommends), in a
// transaction of the caller's, or through the Client — and a completion
// whose transaction did not commit is not counted as a success.
func runWorkerStats(t *testing.T, b Backend) {
	setupBiz := func(t *testing.T) *env {
		e := setup(t, b)
		b.Exec(t, e.url, bizDDL)
		return e
	}
	// work enqueues n jobs of kind, runs them on a worker with handler until
	// each is in want, stops the worker and returns its stats.
	work := func(t *testing.T, e *env, n int, want fenced.JobState, h fenced.Handler) fenced.WorkerStats {
		t.Helper()
		w := e.newWorker(t, fenced.WorkerConfig{PollInterval: 10 * time.Millisecond, Backoff: fastRetry,
			Queues: map[string]int{fenced.DefaultQueue: 3}}, map[string]fenced.Handler{"k": h})
		var ids []int64
		for i := range n {
			ids = append(ids, e.enqueue(t, fenced.EnqueueParams{Kind: "k", Args: map[string]int{"i": i}, MaxAttempts: 1}).ID)
		}
		for _, id := range ids {
			e.waitState(t, id, want)
		}
		stopWorker(t, w) // every outcome is counted before Stop returns
		return w.Stats()
	}
	t.Run("CompletedInItsJobTx", func(t *testing.T) {
		t.Parallel()
		e := setupBiz(t)
		s := work(t, e, 6, fenced.JobSucceeded, func(ctx context.Context, j *fenced.JobRun) error {
			return j.Tx(ctx, func(tx fenced.Tx) error {
				if err := e.insertBiz(tx, fmt.Sprint("job-", j.ID), j.Fence); err != nil {
					return err
				}
				return j.CompleteTx(ctx, tx, map[string]bool{"sent": true})
			})
		})
		if want := (fenced.WorkerStats{Claimed: 6, Succeeded: 6}); s != want {
			t.Fatalf("stats = %+v, want %+v", s, want)
		}
		if rows := e.bizRows(t, fenced.Lease{Name: "stats"}); len(rows) != 6 {
			t.Fatalf("business rows = %v, want six", rows)
		}
	})
	t.Run("CompletedThenReportedLost", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		// After its completion commits, the handler waits until a
		// heartbeat finds the attempt no longer running (it succeeded) and
		// cancels it as lost: it is still counted a success.
		w := e.newWorker(t, fenced.WorkerConfig{PollInterval: 10 * time.Millisecond, LeaseTTL: 30 * time.Second,
			HeartbeatEvery: 20 * time.Millisecond}, map[string]fenced.Handler{
			"k": func(ctx context.Context, j *fenced.JobRun) error {
				if err := j.Tx(ctx, func(tx fenced.Tx) error { return j.CompleteTx(ctx, tx, nil) }); err != nil {
					return err
				}
				<-ctx.Done()
				if cause := context.Cause(ctx); !errors.Is(cause, fenced.ErrJobLost) {
					t.Errorf("handler's context ended with %v, want ErrJobLost", cause)
				}
				return nil
			},
		})
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		e.waitState(t, j.ID, fenced.JobSucceeded)
		deadline := time.Now().Add(10 * time.Second)
		for w.Stats().Succeeded+w.Stats().Lost == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		stopWorker(t, w)
		if want := (fenced.WorkerStats{Claimed: 1, Succeeded: 1}); w.Stats() != want {
			t.Fatalf("stats = %+v, want %+v", w.Stats(), want)
		}
	})
	t.Run("CompletedInACallersTransaction", func(t *testing.T) {
		t.Parallel()
		e := setupBiz(t)
		l := e.acquire(t, "stats-writer", "W", long)
		s := work(t, e, 3, fenced.JobSucceeded, func(ctx context.Context, j *fenced.JobRun) error {
			return e.c.LeaseTx(ctx, *l, func(tx fenced.Tx) error {
				if err := e.insertBiz(tx, fmt.Sprint("job-", j.ID), j.Fence); err != nil {
					return err
				}
				return j.CompleteTx(ctx, tx, nil)
			})
		})
		if want := (fenced.WorkerStats{Claimed: 3, Succeeded: 3}); s != want {
			t.Fatalf("stats = %+v, want %+v", s, want)
		}
	})
	t.Run("EndedThroughTheClient", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		// The handler ends its attempt itself, through the Client, and
		// returns nil: the worker's own completion is refused, and the
		// outcome the handler wrote is what is counted.
		s := work(t, e, 4, fenced.JobSucceeded, func(ctx context.Context, j *fenced.JobRun) error {
			return j.Tx(ctx, func(tx fenced.Tx) error { return e.c.CompleteJobTx(ctx, tx, j.Ref(), nil) })
		})
		if want := (fenced.WorkerStats{Claimed: 4, Succeeded: 4}); s != want {
			t.Fatalf("completed through the Client: stats = %+v, want %+v", s, want)
		}
		e2 := setup(t, b)
		s = work(t, e2, 2, fenced.JobFailed, func(ctx context.Context, j *fenced.JobRun) error {
			return e2.c.FailJob(ctx, j.Ref(), "given up by the handler", 0, true)
		})
		if want := (fenced.WorkerStats{Claimed: 2, Failed: 2}); s != want {
			t.Fatalf("failed through the Client: stats = %+v, want %+v", s, want)
		}
	})
	t.Run("CompletionThatDidNotCommitFailsTheAttempt", func(t *testing.T) {
		t.Parallel()
		e := setupBiz(t)
		// The completion is made, then the transaction rolls back; the
		// handler swallows the error and returns nil.
		s := work(t, e, 2, fenced.JobFailed, func(ctx context.Context, j *fenced.JobRun) error {
			err := j.Tx(ctx, func(tx fenced.Tx) error {
				if err := j.CompleteTx(ctx, tx, nil); err != nil {
					return err
				}
				return errors.New("the business write failed")
			})
			if err == nil {
				return errors.New("the transaction committed")
			}
			return nil
		})
		if want := (fenced.WorkerStats{Claimed: 2, Failed: 2}); s != want {
			t.Fatalf("stats = %+v, want %+v", s, want)
		}
		jobs, err := e.c.ListJobs(ctx(t), fenced.JobFilter{Kind: "k", Limit: 10})
		wantNoErr(t, err, "list jobs")
		for _, j := range jobs {
			if !contains(j.LastError, "did not commit") || !contains(j.LastError, "the business write failed") {
				t.Fatalf("job %d failed with %q, want it to say its completion did not commit, and why", j.ID, j.LastError)
			}
		}
	})
}
