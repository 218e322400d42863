package drivertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runClaimJobsByKind: a claim's kind filter is part of the claim statement.
// A claim (or a Worker) for some kinds never takes a job of another kind,
// even one ahead of them in claim order; the filter keeps the claim order
// and the skip-locked contract; no filter claims every kind.
func runClaimJobsByKind(t *testing.T, b Backend) {
	t.Run("OneKindNeverClaimsAnother", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		// Kind B is ahead in claim order: an unfiltered claim takes it first.
		var bs, as []int64
		for i := range 3 {
			bs = append(bs, e.enqueue(t, fenced.EnqueueParams{Kind: "B", Priority: 0}).ID)
			as = append(as, e.enqueue(t, fenced.EnqueueParams{Kind: "A", Priority: 1 + i}).ID)
		}
		e.enqueue(t, fenced.EnqueueParams{Kind: "A", Queue: "other"}) // another queue
		got := e.claimKinds(t, "W", 10, "A")
		wantIDs(t, "claim of kind A", got, as)
		if again := e.claimKinds(t, "W", 10, "A"); len(again) != 0 {
			t.Fatalf("a second claim of kind A took %v, want nothing", ids(again))
		}
		for _, id := range bs {
			if j, attempts := e.job(t, id); j.State != fenced.JobQueued || j.Attempt != 0 || j.Fence != 0 || len(attempts) != 0 {
				t.Fatalf("job %d of kind B was touched by a claim of kind A: %+v, attempts %+v", id, j, attempts)
			}
		}
		wantIDs(t, "claim of kind B", e.claimKinds(t, "W", 10, "B"), bs)
	})
	t.Run("TwoKindsKeepTheClaimOrder", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		want := map[int][]int64{} // claim order of A and C together, by round
		var order []int64
		for _, p := range []int{3, 0, 2, 1} {
			for _, k := range []string{"A", "B", "C"} {
				id := e.enqueue(t, fenced.EnqueueParams{Kind: k, Priority: p}).ID
				if k != "B" {
					want[p] = append(want[p], id)
				}
			}
		}
		for p := range 4 {
			order = append(order, want[p]...)
		}
		e.enqueue(t, fenced.EnqueueParams{Kind: "A", Delay: time.Hour}) // not due
		// Claimed one at a time, the jobs of A and C come in claim order.
		for i, id := range order {
			got := e.claimKinds(t, "W", 1, "C", "A", "C") // a repeated kind counts once
			if len(got) != 1 || got[0].ID != id {
				t.Fatalf("claim %d of kinds A and C got %v, want job %d", i+1, ids(got), id)
			}
			if got[0].Kind == "B" {
				t.Fatalf("claim of kinds A and C took job %d of kind B", got[0].ID)
			}
		}
		if rest := e.claimKinds(t, "W", 10, "A", "C"); len(rest) != 0 {
			t.Fatalf("claim of kinds A and C took %v after all of theirs", ids(rest))
		}
		if rest := e.claimKinds(t, "W", 10, "B"); len(rest) != 4 {
			t.Fatalf("the four jobs of kind B: claimed %v", ids(rest))
		}
	})
	t.Run("EmptyFilterClaimsEveryKind", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		var all []int64
		for _, k := range []string{"A", "B", "C", "A"} {
			all = append(all, e.enqueue(t, fenced.EnqueueParams{Kind: k}).ID)
		}
		jobs, err := e.c.ClaimJobs(ctx(t), fenced.DefaultQueue, "W", 10, long, []string{}...)
		wantNoErr(t, err, "claim with an empty filter")
		wantIDs(t, "claim with an empty filter", jobs, all)
	})
	t.Run("ConcurrentFilteredClaimsTakeEachJobOnce", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		other := e.b.open(t, e.url, fenced.Config{})
		for i := range 30 {
			e.enqueue(t, fenced.EnqueueParams{Kind: []string{"A", "B", "C"}[i%3]})
		}
		filters := [][]string{{"A"}, {"A"}, {"A", "B"}, {"B", "A"}}
		var mu sync.Mutex
		seen := map[int64]int{}
		var wg sync.WaitGroup
		for i, f := range filters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := []*fenced.Client{e.c, other}[i%2]
				for {
					jobs, err := c.ClaimJobs(ctx(t), fenced.DefaultQueue, fmt.Sprint("W", i), 2, long, f...)
					if err != nil {
						t.Errorf("claim of %v: %v", f, err)
						return
					}
					if len(jobs) == 0 {
						return
					}
					mu.Lock()
					for _, j := range jobs {
						if !slices.Contains(f, j.Kind) {
							t.Errorf("claim of %v took job %d of kind %s", f, j.ID, j.Kind)
						}
						if prev, dup := seen[j.ID]; dup {
							t.Errorf("job %d claimed by W%d and W%d", j.ID, prev, i)
						}
						seen[j.ID] = i
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(seen) != 20 {
			t.Fatalf("claimed %d distinct jobs of kinds A and B, want 20", len(seen))
		}
		if rest := e.claimKinds(t, "W", 20, "C"); len(rest) != 10 {
			t.Fatalf("the ten jobs of kind C: claimed %v", ids(rest))
		}
	})
	t.Run("InvalidFilterIsRefused", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.enqueue(t, fenced.EnqueueParams{Kind: "A"})
		many := make([]string, fenced.MaxClaimKinds+1)
		for i := range many {
			many[i] = fmt.Sprint("k", i)
		}
		for name, kinds := range map[string][]string{
			"Empty": {"A", ""}, "ControlChar": {"a\x00b"}, "BadUTF8": {"\xff"}, "Long": {strings.Repeat("k", 201)},
			"TooMany": many,
		} {
			_, err := e.c.ClaimJobs(ctx(t), fenced.DefaultQueue, "W", 1, long, kinds...)
			var inv *fenced.InvalidError
			if !errors.As(err, &inv) || !errors.Is(err, fenced.ErrInvalid) {
				t.Errorf("%s: claim = %v, want an *InvalidError", name, err)
			}
		}
		// Nothing was claimed; the largest filter allowed is accepted.
		wantIDs(t, "claim with the largest filter", e.claimKinds(t, "W", 1, append(many[:fenced.MaxClaimKinds-1], "A")...),
			[]int64{a.ID})
	})
	t.Run("WorkerClaimsOnlyItsKinds", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		// Jobs of kind B come first in claim order. A worker of kind A
		// must leave them queued: a claim of any kind would take them first.
		var bs []int64
		for range 3 {
			bs = append(bs, e.enqueue(t, fenced.EnqueueParams{Kind: "B", MaxAttempts: 1}).ID)
		}
		var as []int64
		for range 3 {
			as = append(as, e.enqueue(t, fenced.EnqueueParams{Kind: "A", Priority: 1}).ID)
		}
		var mu sync.Mutex
		ran := map[int64]string{}
		w := e.newWorker(t, fenced.WorkerConfig{PollInterval: 10 * time.Millisecond}, map[string]fenced.Handler{
			"A": func(ctx context.Context, j *fenced.JobRun) error {
				mu.Lock()
				ran[j.ID] = j.Kind
				mu.Unlock()
				return nil
			},
		})
		for _, id := range as {
			e.waitState(t, id, fenced.JobSucceeded)
		}
		stopWorker(t, w)
		for _, id := range bs {
			if j, attempts := e.job(t, id); j.State != fenced.JobQueued || j.Attempt != 0 || len(attempts) != 0 {
				t.Fatalf("job %d of kind B was claimed by a worker of kind A: %+v, attempts %+v", id, j, attempts)
			}
		}
		if s := w.Stats(); s.Claimed != 3 || s.Succeeded != 3 || s.Failed+s.Retried != 0 {
			t.Fatalf("stats = %+v, want the three jobs of kind A claimed and succeeded", s)
		}
		if len(ran) != 3 {
			t.Fatalf("handler ran for %v", ran)
		}
	})
	t.Run("TwoWorkersEachRunOnlyTheirKind", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		var mu sync.Mutex
		ranBy := map[int64]string{}
		record := func(worker string) fenced.Handler {
			return func(ctx context.Context, j *fenced.JobRun) error {
				mu.Lock()
				defer mu.Unlock()
				if prev, dup := ranBy[j.ID]; dup {
					t.Errorf("job %d ran on %s and %s", j.ID, prev, worker)
				}
				ranBy[j.ID] = worker
				return nil
			}
		}
		cfg := fenced.WorkerConfig{PollInterval: 10 * time.Millisecond, Queues: map[string]int{fenced.DefaultQueue: 3}}
		wa := e.newWorker(t, cfg, map[string]fenced.Handler{"A": record("A")})
		other := e.b.open(t, e.url, fenced.Config{})
		wb, err := other.NewWorker(cfg)
		wantNoErr(t, err, "new worker")
		wb.Handle("B", record("B"))
		wantNoErr(t, wb.Start(context.Background()), "start worker")
		t.Cleanup(func() { stopWorker(t, wb) })
		kindOf := map[int64]string{}
		for i := range 40 {
			k := []string{"A", "B"}[i%2]
			kindOf[e.enqueue(t, fenced.EnqueueParams{Kind: k, MaxAttempts: 1}).ID] = k
		}
		for id := range kindOf {
			e.waitState(t, id, fenced.JobSucceeded)
		}
		stopWorker(t, wa)
		stopWorker(t, wb)
		for id, k := range kindOf {
			if ranBy[id] != k {
				t.Fatalf("job %d of kind %s ran on the worker of kind %q", id, k, ranBy[id])
			}
		}
		if sa, sb := wa.Stats(), wb.Stats(); sa.Claimed != 20 || sb.Claimed != 20 || sa.Succeeded != 20 || sb.Succeeded != 20 {
			t.Fatalf("stats A %+v, B %+v: want 20 claimed and succeeded each", sa, sb)
		}
	})
	t.Run("WorkerWithoutHandlersIsRefused", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "A"})
		w, err := e.c.NewWorker(fenced.WorkerConfig{PollInterval: 10 * time.Millisecond})
		wantNoErr(t, err, "new worker")
		if err := w.Start(context.Background()); err == nil {
			stopWorker(t, w)
			t.Fatal("a worker without handlers started")
		}
		bad, err := e.c.NewWorker(fenced.WorkerConfig{})
		wantNoErr(t, err, "new worker")
		bad.Handle("", func(ctx context.Context, j *fenced.JobRun) error { return nil })
		if err := bad.Start(context.Background()); !errors.Is(err, fenced.ErrInvalid) {
			stopWorker(t, bad)
			t.Fatalf("a worker with a handler of kind \"\" started: %v", err)
		}
		if got, _ := e.job(t, j.ID); got.State != fenced.JobQueued || got.Attempt != 0 {
			t.Fatalf("job = %+v, want untouched", got)
		}
	})
}

// claimKinds claims up to limit jobs of the default queue of kinds.
func (e *env) claimKinds(t *testing.T, owner string, limit int, kinds ...string) []*fenced.Job {
	t.Helper()
	jobs, err := e.c.ClaimJobs(ctx(t), fenced.DefaultQueue, owner, limit, long, kinds...)
	wantNoErr(t, err, fmt.Sprintf("claim of kinds %q", kinds))
	return jobs
}

// stopWorker stops w, waiting up to five seconds for its jobs.
func stopWorker(t *testing.T, w *fenced.Worker) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w.Stop(c)
}

func ids(jobs []*fenced.Job) []int64 {
	out := make([]int64, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// wantIDs checks that jobs are exactly want, in any order (the order of a
// batch is not the claim order on every backend).
func wantIDs(t *testing.T, what string, jobs []*fenced.Job, want []int64) {
	t.Helper()
	if got := ids(jobs); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Fatalf("%s got jobs %v, want %v", what, got, want)
	}
}
