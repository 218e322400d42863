package drivertest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runClaimJobs: a job is claimed by exactly one claimer, in priority, run_at,
// id order, and a claim skips rows other transactions hold instead of
// waiting for them (docs/design.md §6.3).
func runClaimJobs(t *testing.T, b Backend) {
	t.Run("TwoWorkersOneJobExactlyOneWins", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		other := e.b.open(t, e.url, fenced.Config{})
		e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		var wg sync.WaitGroup
		got := make([]int, 2)
		for i, c := range []*fenced.Client{e.c, other} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				jobs, err := c.ClaimJobs(ctx(t), fenced.DefaultQueue, []string{"A", "B"}[i], 1, long)
				if err != nil {
					t.Errorf("claim: %v", err)
				}
				got[i] = len(jobs)
			}()
		}
		wg.Wait()
		if got[0]+got[1] != 1 {
			t.Fatalf("claims got %v jobs, want exactly one in all", got)
		}
	})
	t.Run("TwoWorkersTenJobsGetDifferentJobs", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		other := e.b.open(t, e.url, fenced.Config{})
		for range 10 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		}
		var mu sync.Mutex
		seen := map[int64]string{}
		var wg sync.WaitGroup
		for i, c := range []*fenced.Client{e.c, other} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				owner := []string{"A", "B"}[i]
				for {
					jobs, err := c.ClaimJobs(ctx(t), fenced.DefaultQueue, owner, 3, long)
					if err != nil {
						t.Errorf("claim: %v", err)
						return
					}
					if len(jobs) == 0 {
						return
					}
					mu.Lock()
					for _, j := range jobs {
						if prev, dup := seen[j.ID]; dup {
							t.Errorf("job %d claimed by %s and %s", j.ID, prev, owner)
						}
						seen[j.ID] = owner
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(seen) != 10 {
			t.Fatalf("claimed %d distinct jobs, want 10", len(seen))
		}
	})
	t.Run("OrderIsPriorityThenRunAtThenID", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		low := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Priority: 5})
		first := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Priority: 0})
		second := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Priority: 0})
		early := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Priority: 1, RunAt: time.Now().Add(-time.Hour)})
		late := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Priority: 1, RunAt: time.Now().Add(-time.Minute)})
		e.enqueue(t, fenced.EnqueueParams{Kind: "k", Delay: time.Hour}) // not due
		e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: "other"})   // another queue
		jobs := e.claim(t, fenced.DefaultQueue, "A", 10, long)
		want := []int64{first.ID, second.ID, early.ID, late.ID, low.ID}
		if len(jobs) != len(want) {
			t.Fatalf("claimed %d jobs, want %d", len(jobs), len(want))
		}
		got := map[int64]bool{}
		for _, j := range jobs {
			got[j.ID] = true
		}
		for _, id := range want {
			if !got[id] {
				t.Fatalf("job %d not claimed", id)
			}
		}
		// The order of a batch is the claim order: check it one at a time.
		e2 := setup(t, b)
		ids := []int64{}
		for _, p := range []int{5, 0, 0, 1} {
			ids = append(ids, e2.enqueue(t, fenced.EnqueueParams{Kind: "k", Priority: p}).ID)
		}
		for _, wantID := range []int64{ids[1], ids[2], ids[3], ids[0]} {
			if j := e2.claimOne(t, "A", long); j.ID != wantID {
				t.Fatalf("claimed %d, want %d", j.ID, wantID)
			}
		}
	})
	t.Run("ClaimReturnsTheJobAsStored", func(t *testing.T) {
		// What a claim returns is the row as its start left it, field by
		// field (a backend may build it from the row it locked instead of
		// reading it again): a second attempt, after a failure with a
		// progress report, keeps the error and drops the progress.
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Args: map[string]any{"a": 1}, Priority: 3, MaxAttempts: 5,
			IdempotencyKey: "claimed-as-stored"})
		asStored := func(got *fenced.Job) {
			t.Helper()
			if got.State != fenced.JobRunning || got.DecidedAt.IsZero() || got.AttemptedAt == nil || got.AttemptedAt.After(got.DecidedAt) {
				t.Fatalf("claimed job: state %s, attempted at %v, decided at %v", got.State, got.AttemptedAt, got.DecidedAt)
			}
			stored, _ := e.job(t, got.ID)
			claimed, _ := json.Marshal(got) // DecidedAt is not marshalled: a read has its own
			read, _ := json.Marshal(stored)
			if string(claimed) != string(read) {
				t.Fatalf("attempt %d: the claim returned\n%s\nthe job as stored is\n%s", got.Attempt, claimed, read)
			}
		}
		first := e.claimOne(t, "A", long)
		asStored(first)
		if _, err := e.c.ReportProgress(ctx(t), first.Ref(), fenced.Progress{Stage: "half"}); err != nil {
			t.Fatalf("progress: %v", err)
		}
		wantNoErr(t, e.c.FailJob(ctx(t), first.Ref(), "boom", time.Millisecond, false), "fail")
		e.waitDue(t, j.ID)
		second := e.claimOne(t, "B", long)
		if second.Attempt != 2 || second.LastError != "boom" || second.Progress != nil {
			t.Fatalf("second attempt: attempt %d, error %q, progress %s", second.Attempt, second.LastError, second.Progress)
		}
		asStored(second)
	})
	t.Run("ClaimSkipsARowLockedByAnotherTransaction", func(t *testing.T) {
		t.Parallel()
		if b.Name == "sqlite" {
			t.Skip("SQLite has one writer: nothing to skip, a claim waits for the write lock")
		}
		e := setup(t, b)
		other := e.b.open(t, e.url, fenced.Config{})
		first := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Priority: 0})
		second := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Priority: 1})
		l := e.acquire(t, "locker", "L", long)
		err := e.c.LeaseTx(ctx(t), *l, func(tx fenced.Tx) error {
			rows, err := tx.Query(ctx(t), e.b.bind(`SELECT id FROM fenced_jobs WHERE id = $1 FOR UPDATE`), first.ID)
			if err != nil {
				return err
			}
			rows.Close()
			cctx, cancel := context.WithTimeout(ctx(t), 5*time.Second)
			defer cancel()
			jobs, err := other.ClaimJobs(cctx, fenced.DefaultQueue, "B", 1, long)
			if err != nil {
				t.Errorf("claim while another transaction holds the first job's row: %v (did it wait instead of skipping?)", err)
				return nil
			}
			if len(jobs) != 1 || jobs[0].ID != second.ID {
				t.Errorf("claim while the first job's row is locked got %d jobs %v, want job %d", len(jobs), jobs, second.ID)
			}
			return nil
		})
		wantNoErr(t, err, "lease tx")
	})
}
