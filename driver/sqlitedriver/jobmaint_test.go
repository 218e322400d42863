package sqlitedriver_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/sqlitedriver"
	"github.com/fenced/fenced/fencedtype"
)

func TestRecoverJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	recoverAll := func(t *testing.T, d *sqlitedriver.Driver, b fencedtype.Backoff) int {
		t.Helper()
		n, err := d.RecoverJobs(ctx, nil, 100, b)
		if err != nil {
			t.Fatalf("recover: %v", err)
		}
		return n
	}

	t.Run("RequeuesWithBackoff", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		ref := claimOne(t, d, 5, "w", 10*time.Millisecond)
		// Two lost attempts with no backoff, then the third: base·2² = 4h.
		for attempt := 1; attempt <= 3; attempt++ {
			if attempt > 1 {
				if got := claim(t, d, "q", "w", 1, 10*time.Millisecond); len(got) != 1 || got[0].Attempt != attempt {
					t.Fatalf("claim %d: %+v", attempt, got)
				}
			}
			waitExpired(t, d, ref.ID)
			b := noBackoff
			if attempt == 3 {
				b = fencedtype.Backoff{Base: time.Hour, Max: 10 * time.Hour}
			}
			if n := recoverAll(t, d, b); n != 1 {
				t.Fatalf("recovered %d, want 1", n)
			}
		}
		j, attempts := getJob(t, d, ref.ID)
		if j.State != fencedtype.JobQueued || j.LeaseExpiresAt != nil || j.FinishedAt != nil || j.LastError == "" {
			t.Fatalf("recovered job %+v", j)
		}
		if delay := j.RunAt.Sub(j.DecidedAt); delay < 3*time.Hour+59*time.Minute || delay > 4*time.Hour {
			t.Fatalf("backoff %v, want 4h", delay)
		}
		if !slices.Equal(outcomes(attempts), []string{fencedtype.OutcomeLost, fencedtype.OutcomeLost, fencedtype.OutcomeLost}) ||
			attempts[2].Error != j.LastError {
			t.Fatalf("history %+v", attempts)
		}
	})

	t.Run("BackoffIsCappedAndJittered", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		var refs []fencedtype.JobRef
		for range 20 {
			refs = append(refs, claimOne(t, d, 5, "w", 10*time.Millisecond))
		}
		for _, r := range refs {
			waitExpired(t, d, r.ID)
		}
		if n := recoverAll(t, d, fencedtype.Backoff{Base: 4 * time.Hour, Max: 2 * time.Hour, Jitter: 0.5}); n != 20 {
			t.Fatalf("recovered %d, want 20", n)
		}
		distinct := map[time.Duration]bool{}
		for _, r := range refs {
			j, _ := getJob(t, d, r.ID)
			delay := j.RunAt.Sub(j.DecidedAt)
			if delay < 59*time.Minute || delay > 2*time.Hour {
				t.Fatalf("backoff %v, want within [1h, 2h]", delay)
			}
			distinct[delay.Round(time.Second)] = true
		}
		if len(distinct) < 2 {
			t.Fatal("jitter gave every job the same delay")
		}
	})

	t.Run("FailsWhenAttemptsAreExhausted", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		ref := claimOne(t, d, 1, "w", 10*time.Millisecond)
		waitExpired(t, d, ref.ID)
		if n := recoverAll(t, d, noBackoff); n != 1 {
			t.Fatalf("recovered %d", n)
		}
		j, attempts := getJob(t, d, ref.ID)
		if j.State != fencedtype.JobFailed || j.FinishedAt == nil || !slices.Equal(outcomes(attempts), []string{fencedtype.OutcomeLost}) {
			t.Fatalf("job %+v history %+v", j, attempts)
		}
	})

	t.Run("CancelsWhenCancelWasRequested", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		ref := claimOne(t, d, 3, "w", 20*time.Millisecond)
		if j, err := d.CancelJob(ctx, ref.ID); err != nil || j.State != fencedtype.JobRunning || !j.CancelRequested {
			t.Fatalf("cancel running: %+v, %v", j, err)
		}
		waitExpired(t, d, ref.ID)
		if n := recoverAll(t, d, noBackoff); n != 1 {
			t.Fatalf("recovered %d", n)
		}
		if j, _ := getJob(t, d, ref.ID); j.State != fencedtype.JobCancelled || j.FinishedAt == nil {
			t.Fatalf("job %+v", j)
		}
	})

	t.Run("NeverTouchesFinishedOrLiveJobs", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		done := claimOne(t, d, 3, "w", time.Hour)
		if err := endJobs(t, d, fencedtype.JobEnd{Ref: done, Kind: fencedtype.EndComplete})[0]; err != nil {
			t.Fatal(err)
		}
		live := claimOne(t, d, 3, "w", time.Hour)
		lost := claimOne(t, d, 3, "w", 10*time.Millisecond)
		waitExpired(t, d, lost.ID)
		if n := recoverAll(t, d, noBackoff); n != 1 {
			t.Fatalf("recovered %d, want only the expired job", n)
		}
		if n := recoverAll(t, d, noBackoff); n != 0 {
			t.Fatalf("second recovery took %d", n)
		}
		if j, attempts := getJob(t, d, done.ID); j.State != fencedtype.JobSucceeded || len(attempts) != 1 {
			t.Fatalf("finished job %+v history %+v", j, attempts)
		}
		if j, _ := getJob(t, d, live.ID); j.State != fencedtype.JobRunning {
			t.Fatalf("live job %+v", j)
		}
	})

	t.Run("UnderAMaintenanceLease", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		l, err := d.AcquireLease(ctx, driver.AcquireLeaseParams{Name: "maint", Owner: "m", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ref := driver.LeaseRef{Name: l.Name, Owner: l.Owner, Fence: l.Fence}
		lost := claimOne(t, d, 3, "w", 10*time.Millisecond)
		waitExpired(t, d, lost.ID)
		stale := driver.LeaseRef{Name: "maint", Owner: "other", Fence: l.Fence}
		if _, err := d.RecoverJobs(ctx, &stale, 10, noBackoff); !errors.Is(err, fencedtype.ErrStale) {
			t.Fatalf("recover under a stale lease: %v", err)
		}
		if _, err := d.DeleteFinishedJobs(ctx, &stale, 0, 10); !errors.Is(err, fencedtype.ErrStale) {
			t.Fatalf("delete under a stale lease: %v", err)
		}
		if j, _ := getJob(t, d, lost.ID); j.State != fencedtype.JobRunning {
			t.Fatalf("a refused maintainer changed the job: %+v", j)
		}
		if n, err := d.RecoverJobs(ctx, &ref, 10, noBackoff); err != nil || n != 1 {
			t.Fatalf("recover under the lease: %d, %v", n, err)
		}
	})
}

func TestDeleteFinishedJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := setupJobs(t)
	done := claimOne(t, d, 3, "w", time.Hour)
	if err := endJobs(t, d, fencedtype.JobEnd{Ref: done, Kind: fencedtype.EndComplete})[0]; err != nil {
		t.Fatal(err)
	}
	queued := enqueue(t, d, newJob("q"))[0]
	if n, err := d.DeleteFinishedJobs(ctx, nil, time.Hour, 10); err != nil || n != 0 {
		t.Fatalf("deleted %d younger than an hour, %v", n, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := d.DeleteFinishedJobs(ctx, nil, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if n != 0 || time.Now().After(deadline) {
			t.Fatalf("deleted %d, want 1", n)
		}
		time.Sleep(time.Millisecond)
	}
	if _, _, err := d.GetJob(ctx, done.ID); !errors.Is(err, fencedtype.ErrNotFound) {
		t.Fatalf("deleted job: %v", err)
	}
	var history int
	if err := d.DB().QueryRowContext(ctx, `SELECT count(*) FROM fenced_job_attempts WHERE job_id = ?1`, done.ID).Scan(&history); err != nil || history != 0 {
		t.Fatalf("%d history rows of a deleted job, %v", history, err)
	}
	if j, _ := getJob(t, d, queued.ID); j.State != fencedtype.JobQueued {
		t.Fatalf("queued job %+v", j)
	}
}

func TestAdvanceFencesOfJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := setupJobs(t)
	if _, err := d.AdvanceFences(ctx, 10); err != nil { // before any job: no sqlite_sequence row yet
		t.Fatal(err)
	}
	ref := claimOne(t, d, 3, "w", time.Hour)
	if ref.ID <= 10 {
		t.Fatalf("first job id %d, want past 10", ref.ID)
	}
	first := enqueue(t, d, newJob("q"))[0]
	if _, err := d.AdvanceFences(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	j, _ := getJob(t, d, ref.ID)
	if j.Fence != ref.Fence+1000 || j.State != fencedtype.JobRunning || j.LeaseExpiresAt.After(j.DecidedAt) {
		t.Fatalf("after advance: %+v", j)
	}
	if q, _ := getJob(t, d, first.ID); q.Fence != 1000 {
		t.Fatalf("queued job fence %d, want 1000", q.Fence)
	}
	wantStale(t, endJobs(t, d, fencedtype.JobEnd{Ref: ref, Kind: fencedtype.EndComplete})[0], fencedtype.ReasonSuperseded, ref.Fence+1000, "")
	if n, err := d.RecoverJobs(ctx, nil, 10, noBackoff); err != nil || n != 1 {
		t.Fatalf("recover: %d, %v", n, err)
	}
	if again := claim(t, d, "q", "w", 10, time.Hour); len(again) != 2 || again[0].Fence <= 1000 || again[1].Fence <= 1000 {
		t.Fatalf("claims after advance: %+v", again)
	}
	next := enqueue(t, d, newJob("q"))[0]
	if next.ID <= ref.ID+1000 {
		t.Fatalf("job id %d after advancing by 1000 past %d", next.ID, ref.ID)
	}

	// Ids never go back, even once every job is gone.
	if _, err := d.DB().ExecContext(ctx, `DELETE FROM fenced_jobs`); err != nil {
		t.Fatal(err)
	}
	if _, err := d.AdvanceFences(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if last := enqueue(t, d, newJob("q"))[0]; last.ID <= next.ID+5 {
		t.Fatalf("job id %d after deleting all and advancing by 5 past %d", last.ID, next.ID)
	}
}
