package drivertest

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runRecoverJobs: running jobs whose lease expired by the database clock are
// taken back — queued after backoff, failed when out of attempts, cancelled
// when asked to — and nothing else is touched (docs/design.md §6.7).
func runRecoverJobs(t *testing.T, b Backend) {
	slow := fenced.Backoff{Base: time.Hour, Max: time.Hour, Jitter: -1}
	t.Run("ExpiredGoesBackToQueuedAfterBackoff", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", 30*time.Millisecond)
		got := e.recoverWith(t, j.ID, slow)
		if got.State != fenced.JobQueued || !strings.Contains(got.LastError, "lease expired") || got.Fence != a.Fence {
			t.Fatalf("recovered = %+v", got)
		}
		if until := time.Until(got.RunAt); until < 59*time.Minute {
			t.Fatalf("recovered job runs again in %s, want the 1h backoff", until)
		}
		_, attempts := e.job(t, j.ID)
		if len(attempts) != 1 || attempts[0].Outcome != "lost" || attempts[0].Owner != "A" {
			t.Fatalf("history = %+v", attempts)
		}
	})
	t.Run("ExhaustedGoesToFailed", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k", MaxAttempts: 1})
		e.claimOne(t, "A", 30*time.Millisecond)
		if got := e.recoverExpired(t, j.ID); got.State != fenced.JobFailed || got.FinishedAt == nil {
			t.Fatalf("recovered = %+v", got)
		}
	})
	t.Run("CancelRequestedGoesToCancelled", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		e.claimOne(t, "A", 100*time.Millisecond)
		_, err := e.c.CancelJob(ctx(t), j.ID)
		wantNoErr(t, err, "cancel")
		if got := e.recoverExpired(t, j.ID); got.State != fenced.JobCancelled {
			t.Fatalf("recovered = %+v", got)
		}
	})
	t.Run("NeverTouchesAFinishedJob", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		done := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", 5*time.Second) // completed well within its lease
		wantNoErr(t, e.c.CompleteJob(ctx(t), a.Ref(), nil), "complete")
		other := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		e.claimOne(t, "A", 100*time.Millisecond)
		e.recoverExpired(t, other.ID) // by now done's old lease is long expired too
		if got, attempts := e.job(t, done.ID); got.State != fenced.JobSucceeded || len(attempts) != 1 {
			t.Fatalf("recovery touched a finished job: %+v %+v", got, attempts)
		}
	})
	t.Run("GuardedByTheMaintenanceLease", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		e.claimOne(t, "A", 30*time.Millisecond)
		m := e.acquire(t, "maint", "M1", 50*time.Millisecond)
		e.waitExpired(t, "maint")
		e.acquire(t, "maint", "M2", long)
		_, err := e.c.RecoverJobs(ctx(t), m, 100, slow)
		wantStale(t, err, m.Fence, m.Fence+1, "M2", fenced.ReasonSuperseded)
		if got, _ := e.job(t, j.ID); got.State != fenced.JobRunning {
			t.Fatalf("a stale maintainer recovered the job: %+v", got)
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

// runDeleteFinishedJobs: retention deletes finished jobs past their age and
// nothing else (docs/design.md §6.15).
func runDeleteFinishedJobs(t *testing.T, b Backend) {
	t.Run("RetentionDeletesOnlyOldFinishedJobs", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", long)
		wantNoErr(t, e.c.CompleteJob(ctx(t), a.Ref(), nil), "complete")
		n, err := e.c.DeleteFinishedJobs(ctx(t), nil, time.Hour, 100)
		wantNoErr(t, err, "delete young")
		if n != 0 {
			t.Fatalf("deleted %d jobs younger than an hour", n)
		}
		// Age 0 deletes what finished before the database's now; SQLite's
		// clock counts milliseconds, and the end and this call can fall in one
		// (CI failed so once): let the clock pass the end's.
		time.Sleep(2 * time.Millisecond)
		n, err = e.c.DeleteFinishedJobs(ctx(t), nil, 0, 100)
		wantNoErr(t, err, "delete")
		if n != 1 {
			t.Fatalf("deleted %d, want the finished one", n)
		}
		if _, _, err := e.c.GetJob(ctx(t), a.ID); err == nil {
			t.Fatal("finished job still there")
		}
		if jobs, _ := e.c.ListJobs(ctx(t), fenced.JobFilter{}); len(jobs) != 1 {
			t.Fatalf("%d jobs left, want the queued one", len(jobs))
		}
	})
}

// runMaintainer: maintainers recover and enqueue periodic jobs once per
// period between them, reading the period from the database clock every
// round (docs/design.md §6.15).
func runMaintainer(t *testing.T, b Backend) {
	t.Run("PeriodicJobsFollowTheDatabaseClockEveryRound", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		m, err := e.c.StartMaintenance(ctx(t), fenced.MaintenanceConfig{Every: 20 * time.Millisecond, LeaseTTL: time.Minute,
			Periodic: []fenced.PeriodicJob{{Kind: "tick", Every: time.Second}}})
		wantNoErr(t, err, "start maintenance")
		defer m.Stop()
		// With a one-minute lease the keeper renews every 20 s: the periods
		// must come from each round's own reading of the clock.
		deadline := time.Now().Add(15 * time.Second)
		for {
			ticks, _ := e.c.ListJobs(ctx(t), fenced.JobFilter{Kind: "tick"})
			if len(ticks) >= 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d periodic jobs after the deadline, want one a second", len(ticks))
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	t.Run("MaintainersRecoverAndEnqueuePeriodicJobsOncePerPeriod", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		e.claimOne(t, "A", 30*time.Millisecond)
		cfg := fenced.MaintenanceConfig{Every: 10 * time.Millisecond, LeaseTTL: time.Second,
			Backoff:  fenced.Backoff{Base: time.Hour},
			Periodic: []fenced.PeriodicJob{{Kind: "tick", Every: time.Hour}}}
		var ms []*fenced.Maintainer
		var wg sync.WaitGroup
		for _, c := range []*fenced.Client{e.c, e.b.open(t, e.url, fenced.Config{})} {
			m, err := c.StartMaintenance(ctx(t), cfg)
			wantNoErr(t, err, "start maintenance")
			ms = append(ms, m)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, _ := e.job(t, j.ID)
			ticks, _ := e.c.ListJobs(ctx(t), fenced.JobFilter{Kind: "tick"})
			if got.State == fenced.JobQueued && len(ticks) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("maintenance did not run: job %s, %d ticks", got.State, len(ticks))
			}
			time.Sleep(10 * time.Millisecond)
		}
		for _, m := range ms {
			wg.Add(1)
			go func() { defer wg.Done(); m.Stop() }()
		}
		wg.Wait()
		if ticks, _ := e.c.ListJobs(ctx(t), fenced.JobFilter{Kind: "tick"}); len(ticks) != 1 {
			t.Fatalf("%d periodic jobs for one period", len(ticks))
		}
	})
}

// recoverWith runs recovery with backoff b until the job left running.
func (e *env) recoverWith(t *testing.T, id int64, b fenced.Backoff) *fenced.Job {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := e.c.RecoverJobs(ctx(t), nil, 1000, b)
		wantNoErr(t, err, "recover")
		if j, _ := e.job(t, id); j.State != fenced.JobRunning {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d was never recovered", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
