package fencedtest

import (
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runJobFences holds the job queue to the same fence rules as leases: an
// attempt whose lease ran out by the database clock can no longer write even
// though no one has taken it back yet (design §6), and a fence advance moves
// every job's next attempt above every fence its job had before (design §7).
func runJobFences(t *testing.T, b Backend) {
	t.Run("AdvanceMovesEveryJobsNextFenceUp", func(t *testing.T) {
		t.Parallel()
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
	t.Run("WritesAfterTheAttemptsLeaseRanOutAreStale", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		b.Exec(t, e.url, bizDDL)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", 50*time.Millisecond)
		// No recovery runs: the attempt is still the job's latest, only its
		// lease is over by the database clock.
		deadline := time.Now().Add(10 * time.Second)
		for {
			cur, _ := e.job(t, j.ID)
			if cur.LeaseExpiresAt == nil || cur.State != fenced.JobRunning {
				t.Fatalf("job changed without recovery: %+v", cur)
			}
			if cur.DecidedAt.After(cur.LeaseExpiresAt.Add(time.Second)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("database clock never passed the attempt's lease")
			}
			time.Sleep(10 * time.Millisecond)
		}
		wantStale(t, errAt(e.c.ReportProgress(ctx(t), a.Ref(), fenced.Progress{Stage: "late"})), a.Fence, a.Fence, "", fenced.ReasonExpired)
		hb, err := e.c.HeartbeatJobs(ctx(t), []fenced.JobRef{a.Ref()}, long)
		wantNoErr(t, err, "heartbeat")
		if len(hb.Lost) != 1 || len(hb.Extended) != 0 {
			t.Fatalf("heartbeat after the lease ran out = %+v, want lost", hb)
		}
		called := false
		err = e.c.JobTx(ctx(t), a.Ref(), func(tx fenced.Tx) error {
			called = true
			return e.insertBiz(tx, "late", 1)
		})
		wantStale(t, err, a.Fence, a.Fence, "", fenced.ReasonExpired)
		if called {
			t.Fatal("job tx body ran after the attempt's lease ran out")
		}
		wantStale(t, e.c.CompleteJob(ctx(t), a.Ref(), "late"), a.Fence, a.Fence, "", fenced.ReasonExpired)
		cur, _ := e.job(t, j.ID)
		if cur.State != fenced.JobRunning || len(cur.Output) != 0 || len(cur.Progress) != 0 {
			t.Fatalf("a write after the lease ran out changed the job: %+v", cur)
		}
		if got := e.bizRows(t, fenced.Lease{Name: "late"}); len(got) != 0 {
			t.Fatalf("business write after the lease ran out is visible: %v", got)
		}
	})
	t.Run("CompleteInALongerTransactionJudgesTheLeaseAtTheWrite", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		other := e.b.open(t, e.url, fenced.Config{})
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", 500*time.Millisecond)
		l := e.acquire(t, "own-tx", "A", long)
		// The caller's transaction begins while the attempt's lease is
		// valid; by the time it completes the job the lease has run out.
		// Expiry is the database clock at the write, not at the start of
		// the transaction (design §3: clock_timestamp(), not now()).
		err := e.c.LeaseTx(ctx(t), *l, func(tx fenced.Tx) error {
			deadline := time.Now().Add(10 * time.Second)
			for {
				now, err := other.DatabaseTime(ctx(t))
				if err != nil {
					return err
				}
				if now.After(a.LeaseExpiresAt.Add(200 * time.Millisecond)) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("database clock never passed the attempt's lease")
				}
				time.Sleep(20 * time.Millisecond)
			}
			return e.c.CompleteJobTx(ctx(t), tx, a.Ref(), "late")
		})
		wantStale(t, err, a.Fence, a.Fence, "", fenced.ReasonExpired)
		if cur, _ := e.job(t, j.ID); cur.State != fenced.JobRunning || len(cur.Output) != 0 {
			t.Fatalf("a completion after the lease ran out changed the job: %+v", cur)
		}
	})
	t.Run("RecoveryLeavesAnUnexpiredAttemptAlone", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		// A lease of two seconds, still running when recovery looks: only
		// expiry by the database clock lets recovery take an attempt back.
		a := e.claimOne(t, "A", 2*time.Second)
		n, err := e.c.RecoverJobs(ctx(t), nil, 100, fenced.Backoff{Base: time.Microsecond, Max: time.Microsecond})
		wantNoErr(t, err, "recover")
		if cur, _ := e.job(t, j.ID); n != 0 || cur.State != fenced.JobRunning || cur.Fence != a.Fence {
			t.Fatalf("recovery took back an attempt whose lease had not run out: %d recovered, job %+v", n, cur)
		}
		wantNoErr(t, e.c.CompleteJob(ctx(t), a.Ref(), nil), "complete within the lease")
	})
}
