package drivertest

import (
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runJobFences holds the job queue to the same fence rules as leases: an
// attempt whose lease ran out by the database clock can no longer write,
// though no one has taken it back yet (docs/design.md §6.4).
func runJobFences(t *testing.T, b Backend) {
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
}
