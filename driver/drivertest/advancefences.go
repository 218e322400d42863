package drivertest

import (
	"errors"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedtype"
)

// runAdvanceFences: after an advance every fence granted, to a lease or to
// a job's attempt, is above every fence granted before, and the generations
// current before it are over (docs/design.md §7).
func runAdvanceFences(t *testing.T, b Backend) {
	t.Run("EveryFenceAfterRestoreIsAboveEveryFenceBefore", func(t *testing.T) {
		t.Parallel()
		url := b.NewURL(t)
		c := b.open(t, url, fenced.Config{})
		_, err := c.Migrate(ctx(t))
		wantNoErr(t, err, "migrate")
		grant := func(c *fenced.Client, name, owner string) int64 {
			t.Helper()
			l, err := c.AcquireLease(ctx(t), name, owner, long)
			wantNoErr(t, err, "acquire")
			wantNoErr(t, errOf(c.ReleaseLease(ctx(t), *l)), "release")
			return l.Fence
		}
		grant(c, "a", "w")
		grant(c, "b", "w")
		restore := b.Snapshot(t, url) // the "backup"
		var before int64
		for i := 0; i < 5; i++ {
			before = max(before, grant(c, "a", "w"))
		}
		before = max(before, grant(c, "c", "w")) // a name the backup never saw
		wantNoErr(t, c.Close(), "close")
		restore()

		c = b.open(t, url, fenced.Config{})
		// Without an advance the restored copy would hand out old fences again.
		if f := grant(c, "a", "w"); f > before {
			t.Fatalf("restored copy granted %d, want a repeat of a fence ≤ %d (is the snapshot real?)", f, before)
		}
		floor, err := c.AdvanceFences(ctx(t), 100)
		wantNoErr(t, err, "advance")
		if floor <= before {
			t.Fatalf("floor %d not above %d", floor, before)
		}
		for _, name := range []string{"a", "b", "c", "d"} {
			if f := grant(c, name, "w"); f <= before || f <= floor {
				t.Fatalf("after advance %s granted %d, want > %d and > floor %d", name, f, before, floor)
			}
		}
	})
	t.Run("AdvanceEndsCurrentHolders", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquire(t, "job", "A", long)
		floor, err := e.c.AdvanceFences(ctx(t), 0)
		wantNoErr(t, err, "advance")
		if floor != 1+fenced.DefaultAdvance {
			t.Fatalf("floor = %d", floor)
		}
		_, err = e.c.RenewLease(ctx(t), *a, long)
		wantStale(t, err, 1, floor, "", fenced.ReasonSuperseded)
		wantFence(t, e.acquire(t, "job", "B", time.Second), floor+1)
	})
	t.Run("AdvancedLeasesAreReportedAsSuch", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		held := e.acquire(t, "held", "A", long)
		freed := e.acquire(t, "freed", "B", long)
		_, err := e.c.ReleaseLease(ctx(t), *freed)
		wantNoErr(t, err, "release")
		// Before any advance, a released lease is not advanced.
		l, err := e.c.GetLease(ctx(t), "freed")
		wantNoErr(t, err, "get")
		if !l.Released || l.Advanced {
			t.Fatalf("released lease before an advance: %+v", l)
		}
		floor, err := e.c.AdvanceFences(ctx(t), 100)
		wantNoErr(t, err, "advance")
		check := func(l *fenced.Lease, owner string) {
			t.Helper()
			if !l.Advanced || !l.Released || l.Held || l.Fence != floor || l.Owner != owner {
				t.Fatalf("after the advance to %d: %+v, want advanced, released, not held, fence = floor, owner %s", floor, l, owner)
			}
		}
		l, err = e.c.GetLease(ctx(t), "held")
		wantNoErr(t, err, "get")
		check(l, held.Owner)
		ls, err := e.c.ListLeases(ctx(t))
		wantNoErr(t, err, "list")
		if len(ls) != 2 {
			t.Fatalf("list: %d leases", len(ls))
		}
		check(ls[0], "B") // "freed" sorts first
		check(ls[1], "A")
		// A grant after the advance is an ordinary lease again; the other
		// stays advanced, and a release of the new generation is not.
		g := e.acquire(t, "held", "C", long)
		if g.Fence <= floor || g.Advanced {
			t.Fatalf("grant after the advance: %+v", g)
		}
		_, err = e.c.ReleaseLease(ctx(t), *g)
		wantNoErr(t, err, "release")
		ls, err = e.c.ListLeases(ctx(t))
		wantNoErr(t, err, "list")
		if !ls[0].Advanced || ls[1].Advanced || !ls[1].Released {
			t.Fatalf("after a new grant and its release: %+v, %+v", ls[0], ls[1])
		}
	})
	t.Run("NegativeStepIsInvalid", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		_, err := e.c.AdvanceFences(ctx(t), -1)
		if !errors.Is(err, fenced.ErrInvalid) {
			t.Fatalf("want invalid, got %v", err)
		}
	})
	t.Run("AdvanceMovesEveryJobsNextFenceUp", func(t *testing.T) {
		t.Parallel()
		b.need(t, fenced.CapJobs)
		e := setup(t, b)
		const by = 100
		ran := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", time.Second)
		if a.ID != ran.ID {
			t.Fatalf("claimed %d, want %d", a.ID, ran.ID)
		}
		queued := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		_, err := e.c.AdvanceFences(ctx(t), by)
		wantNoErr(t, err, "advance")
		// The attempt begun before the advance can no longer write.
		if err := e.c.CompleteJob(ctx(t), a.Ref(), nil); err == nil {
			t.Fatal("an attempt begun before the fence advance completed its job")
		}
		e.recoverExpired(t, ran.ID)
		got := map[int64]int64{}
		for range 2 {
			j := e.claimOne(t, "B", long)
			got[j.ID] = j.Fence
		}
		if got[ran.ID] <= a.Fence+by {
			t.Fatalf("job %d claimed again with fence %d after an advance by %d from %d", ran.ID, got[ran.ID], by, a.Fence)
		}
		if got[queued.ID] <= by {
			t.Fatalf("queued job %d first claimed with fence %d after an advance by %d", queued.ID, got[queued.ID], by)
		}
	})
	t.Run("SucceededAttemptKeepsItsFenceAcrossAnAdvance", func(t *testing.T) {
		// A completion writes no history row: the succeeded row holds its
		// last attempt. An advance leaves that row alone (a succeeded job
		// has no next attempt), so its history still tells the fence the
		// attempt ran under, while a failed job's next attempt moves up.
		t.Parallel()
		b.need(t, fenced.CapJobs)
		e := setup(t, b)
		const by = 100
		done := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		failed := e.enqueue(t, fenced.EnqueueParams{Kind: "k", MaxAttempts: 1})
		var doneRef, failedRef fenced.JobRef
		for range 2 {
			j := e.claimOne(t, "A", long)
			if j.ID == done.ID {
				doneRef = j.Ref()
			} else {
				failedRef = j.Ref()
			}
		}
		wantNoErr(t, e.c.CompleteJob(ctx(t), doneRef, nil), "complete")
		wantNoErr(t, e.c.FailJob(ctx(t), failedRef, "boom", 0, false), "fail")
		_, err := e.c.AdvanceFences(ctx(t), by)
		wantNoErr(t, err, "advance")
		got, attempts := e.job(t, done.ID)
		if got.State != fenced.JobSucceeded || got.Fence != doneRef.Fence || len(attempts) != 1 ||
			attempts[0].Outcome != fencedtype.OutcomeSucceeded || attempts[0].Fence != doneRef.Fence ||
			attempts[0].Attempt != 1 || attempts[0].Owner != "A" || attempts[0].EndedAt == nil ||
			!attempts[0].EndedAt.Equal(*got.FinishedAt) || !attempts[0].StartedAt.Equal(*got.AttemptedAt) {
			t.Fatalf("succeeded job after an advance: %+v, history %+v; want its attempt at fence %d", got, attempts, doneRef.Fence)
		}
		f, attempts := e.job(t, failed.ID)
		if f.State != fenced.JobFailed || f.Fence != failedRef.Fence+by || len(attempts) != 1 ||
			attempts[0].Outcome != fencedtype.OutcomeFailed || attempts[0].Fence != failedRef.Fence {
			t.Fatalf("failed job after an advance: %+v, history %+v", f, attempts)
		}
	})
}
