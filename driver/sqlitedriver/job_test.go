package sqlitedriver_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/sqlitedriver"
	"github.com/fenced/fenced/fencedtype"
)

// openJobs opens and migrates a driver on path.
func openJobs(t *testing.T, path string) *sqlitedriver.Driver {
	t.Helper()
	d, err := sqlitedriver.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	if _, err := d.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return d
}

// setupJobs returns a driver on a fresh database and the file's path.
func setupJobs(t *testing.T) (*sqlitedriver.Driver, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.db")
	return openJobs(t, path), path
}

func newJob(queue string) driver.EnqueueParams {
	return driver.EnqueueParams{Kind: "email", Queue: queue, Args: []byte(`{"to":"a@b"}`), MaxAttempts: 3}
}

func enqueue(t *testing.T, d *sqlitedriver.Driver, jobs ...driver.EnqueueParams) []*fencedtype.Job {
	t.Helper()
	res, err := d.Enqueue(context.Background(), nil, jobs)
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	out := make([]*fencedtype.Job, len(res))
	for i, r := range res {
		out[i] = r.Job
	}
	return out
}

func claim(t *testing.T, d *sqlitedriver.Driver, queue, owner string, limit int, ttl time.Duration) []*fencedtype.Job {
	t.Helper()
	jobs, err := d.ClaimJobs(context.Background(), driver.ClaimJobsParams{Queue: queue, Owner: owner, Limit: limit, TTL: ttl})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return jobs
}

// claimOne enqueues one job with maxAttempts and claims it.
func claimOne(t *testing.T, d *sqlitedriver.Driver, maxAttempts int, owner string, ttl time.Duration) fencedtype.JobRef {
	t.Helper()
	p := newJob("q")
	p.MaxAttempts = maxAttempts
	j := enqueue(t, d, p)[0]
	got := claim(t, d, "q", owner, 1, ttl)
	if len(got) != 1 || got[0].ID != j.ID {
		t.Fatalf("claim: got %v, want job %d", got, j.ID)
	}
	return fencedtype.JobRef{ID: j.ID, Fence: got[0].Fence}
}

func getJob(t *testing.T, d *sqlitedriver.Driver, id int64) (*fencedtype.Job, []fencedtype.JobAttempt) {
	t.Helper()
	j, attempts, err := d.GetJob(context.Background(), id)
	if err != nil {
		t.Fatalf("get job %d: %v", id, err)
	}
	return j, attempts
}

// finish ends attempts and returns their per-job errors.
func finish(t *testing.T, d *sqlitedriver.Driver, ends ...fencedtype.JobEnd) []error {
	t.Helper()
	errs, _, err := d.EndJobs(context.Background(), nil, ends)
	if err != nil {
		t.Fatalf("finish: %v", err)
	}
	if len(errs) != len(ends) {
		t.Fatalf("finish: %d results for %d ends", len(errs), len(ends))
	}
	return errs
}

// waitExpired polls, on the database clock, until the job's lease ran out.
func waitExpired(t *testing.T, d *sqlitedriver.Driver, id int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		j, _ := getJob(t, d, id)
		if j.LeaseExpiresAt == nil || !j.LeaseExpiresAt.After(j.DecidedAt) {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("lease of job %d did not expire", id)
}

func wantStale(t *testing.T, err error, reason fencedtype.StaleReason, current int64, owner string) {
	t.Helper()
	var se *fencedtype.StaleError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want *StaleError", err)
	}
	if se.Reason != reason || se.CurrentFence != current || se.CurrentOwner != owner || se.Kind != "job" {
		t.Fatalf("got %+v, want reason %s, current fence %d, owner %q", se, reason, current, owner)
	}
}

func outcomes(attempts []fencedtype.JobAttempt) []string {
	var out []string
	for _, a := range attempts {
		out = append(out, a.Outcome)
	}
	return out
}

var noBackoff = fencedtype.Backoff{}

func TestClaimJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("ByPriorityRunAtAndIDWithinLimit", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		base := time.Now().Add(-time.Hour)
		at := func(prio int, off time.Duration) driver.EnqueueParams {
			p := newJob("q")
			p.Priority, p.RunAt = prio, base.Add(off)
			return p
		}
		future := newJob("q")
		future.Delay = time.Hour
		other := newJob("other")
		in := enqueue(t, d, at(1, 0), at(0, 2*time.Second), at(0, time.Second), at(0, time.Second), future, other)
		first := claim(t, d, "q", "w1", 3, time.Minute)
		if got, want := ids(first), []int64{in[2].ID, in[3].ID, in[1].ID}; !slices.Equal(got, want) {
			t.Fatalf("first claim %v, want %v", got, want)
		}
		for _, j := range first {
			if j.State != fencedtype.JobRunning || j.Attempt != 1 || j.Fence != 1 || j.Owner != "w1" ||
				j.LeaseExpiresAt == nil || !j.LeaseExpiresAt.After(j.DecidedAt) || j.AttemptedAt == nil {
				t.Fatalf("claimed %+v", j)
			}
		}
		if got := ids(claim(t, d, "q", "w1", 10, time.Minute)); !slices.Equal(got, []int64{in[0].ID}) {
			t.Fatalf("second claim %v, want only %d (the other is scheduled in an hour)", got, in[0].ID)
		}
		if got := claim(t, d, "q", "w1", 10, time.Minute); len(got) != 0 {
			t.Fatalf("claimed a job scheduled in the future: %v", ids(got))
		}
	})

	t.Run("ConcurrentClaimersGetDisjointJobs", func(t *testing.T) {
		t.Parallel()
		d, path := setupJobs(t)
		d2 := openJobs(t, path)
		var batch []driver.EnqueueParams
		for range 40 {
			batch = append(batch, newJob("q"))
		}
		enqueue(t, d, batch...)
		var mu sync.Mutex
		got := map[int64]string{}
		var wg sync.WaitGroup
		for i, dd := range []*sqlitedriver.Driver{d, d2, d, d2} {
			owner := fmt.Sprintf("w%d", i)
			wg.Go(func() {
				for {
					jobs, err := dd.ClaimJobs(ctx, driver.ClaimJobsParams{Queue: "q", Owner: owner, Limit: 3, TTL: time.Minute})
					if err != nil {
						t.Errorf("claim: %v", err)
						return
					}
					if len(jobs) == 0 {
						return
					}
					mu.Lock()
					for _, j := range jobs {
						if prev, ok := got[j.ID]; ok {
							t.Errorf("job %d claimed by %s and %s", j.ID, prev, owner)
						}
						got[j.ID] = owner
						if j.Fence != 1 {
							t.Errorf("job %d fence %d on its first claim", j.ID, j.Fence)
						}
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(got) != 40 {
			t.Fatalf("%d jobs claimed, want 40", len(got))
		}
	})
}

func ids(jobs []*fencedtype.Job) []int64 {
	var out []int64
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

func TestHeartbeatJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("ExtendsAndReportsLostAndCancelRequested", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		enqueue(t, d, newJob("q"), newJob("q"), newJob("q"))
		jobs := claim(t, d, "q", "w", 3, time.Minute)
		if _, err := d.CancelJob(ctx, jobs[1].ID); err != nil {
			t.Fatal(err)
		}
		refs := []fencedtype.JobRef{{ID: jobs[0].ID, Fence: 1}, {ID: jobs[1].ID, Fence: 1}, {ID: jobs[2].ID, Fence: 7}, {ID: 9999, Fence: 1}}
		res, err := d.HeartbeatJobs(ctx, refs, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Extended, []int64{jobs[0].ID, jobs[1].ID}) ||
			!slices.Equal(res.CancelRequested, []int64{jobs[1].ID}) ||
			!slices.Equal(res.Lost, []int64{jobs[2].ID, 9999}) {
			t.Fatalf("heartbeat %+v", res)
		}
		j, _ := getJob(t, d, jobs[0].ID)
		if !j.LeaseExpiresAt.After(*jobs[0].LeaseExpiresAt) || j.LeaseExpiresAt.Sub(j.DecidedAt) < 59*time.Minute {
			t.Fatalf("lease not extended: was %v, is %v at %v", jobs[0].LeaseExpiresAt, j.LeaseExpiresAt, j.DecidedAt)
		}
		if res.ExpiresAt.After(*j.LeaseExpiresAt) || res.ExpiresAt.Sub(j.DecidedAt) < 59*time.Minute {
			t.Fatalf("reported expiry %v, stored %v at %v", res.ExpiresAt, j.LeaseExpiresAt, j.DecidedAt)
		}
	})

	t.Run("AfterExpiryIsLost", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		ref := claimOne(t, d, 3, "w", 20*time.Millisecond)
		waitExpired(t, d, ref.ID)
		res, err := d.HeartbeatJobs(ctx, []fencedtype.JobRef{ref}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Extended) != 0 || !slices.Equal(res.Lost, []int64{ref.ID}) {
			t.Fatalf("heartbeat after expiry: %+v", res)
		}
	})
}

func TestEndJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("EveryKindOfEndWithHistory", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		mk := func(maxAttempts int) driver.EnqueueParams {
			p := newJob("q")
			p.MaxAttempts = maxAttempts
			return p
		}
		in := enqueue(t, d, mk(3), mk(3), mk(1), mk(3), mk(3), mk(3))
		claimed := claim(t, d, "q", "w", 10, time.Hour)
		if len(claimed) != len(in) {
			t.Fatalf("claimed %d of %d", len(claimed), len(in))
		}
		ref := func(i int) fencedtype.JobRef { return fencedtype.JobRef{ID: in[i].ID, Fence: 1} }
		errs := finish(t, d,
			fencedtype.JobEnd{Ref: ref(0), Kind: fencedtype.EndComplete, Output: []byte(`{"sent":true}`)},
			fencedtype.JobEnd{Ref: ref(1), Kind: fencedtype.EndFail, Error: "boom", Delay: time.Hour},
			fencedtype.JobEnd{Ref: ref(2), Kind: fencedtype.EndFail, Error: "boom"},
			fencedtype.JobEnd{Ref: ref(3), Kind: fencedtype.EndFail, Error: "bad input", Discard: true},
			fencedtype.JobEnd{Ref: ref(4), Kind: fencedtype.EndSnooze, Delay: time.Hour},
			fencedtype.JobEnd{Ref: ref(5), Kind: fencedtype.EndCancel, Error: "asked to stop"},
			fencedtype.JobEnd{Ref: fencedtype.JobRef{ID: in[0].ID, Fence: 1}, Kind: fencedtype.EndComplete},
			fencedtype.JobEnd{Ref: fencedtype.JobRef{ID: 9999, Fence: 1}, Kind: fencedtype.EndComplete},
		)
		for i := range 6 {
			if errs[i] != nil {
				t.Fatalf("end %d: %v", i, errs[i])
			}
		}
		wantStale(t, errs[6], fencedtype.ReasonNotRunning, 1, "")
		if !errors.Is(errs[7], fencedtype.ErrNotFound) {
			t.Fatalf("end of an unknown job: %v, want ErrNotFound", errs[7])
		}

		type want struct {
			state    fencedtype.JobState
			outcome  string
			errText  string
			finished bool
			max      int
		}
		for i, w := range []want{
			{fencedtype.JobSucceeded, fencedtype.OutcomeSucceeded, "", true, 3},
			{fencedtype.JobQueued, fencedtype.OutcomeRetry, "boom", false, 3},
			{fencedtype.JobFailed, fencedtype.OutcomeFailed, "boom", true, 1},
			{fencedtype.JobFailed, fencedtype.OutcomeFailed, "bad input", true, 3},
			{fencedtype.JobQueued, fencedtype.OutcomeSnoozed, "", false, 4},
			{fencedtype.JobCancelled, fencedtype.OutcomeCancelled, "asked to stop", true, 3},
		} {
			j, attempts := getJob(t, d, in[i].ID)
			if j.State != w.state || (j.FinishedAt != nil) != w.finished || j.MaxAttempts != w.max ||
				j.LeaseExpiresAt != nil || j.LastError != w.errText {
				t.Errorf("job %d: %+v, want %+v", i, j, w)
			}
			if len(attempts) != 1 {
				t.Fatalf("job %d history %+v", i, attempts)
			}
			a := attempts[0]
			if a.Attempt != 1 || a.Fence != 1 || a.Owner != "w" || a.Outcome != w.outcome || a.Error != w.errText ||
				a.EndedAt == nil || a.EndedAt.Before(a.StartedAt) {
				t.Errorf("job %d attempt %+v, want outcome %s error %q", i, a, w.outcome, w.errText)
			}
			if w.state == fencedtype.JobQueued && j.RunAt.Sub(j.DecidedAt) < 59*time.Minute {
				t.Errorf("job %d runs again in %v, want the 1h delay", i, j.RunAt.Sub(j.DecidedAt))
			}
		}
		if j, _ := getJob(t, d, in[0].ID); string(j.Output) != `{"sent":true}` {
			t.Fatalf("output %s", j.Output)
		}
	})

	t.Run("StaleFinishAfterRecoveryAndReclaim", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		old := claimOne(t, d, 3, "w1", 20*time.Millisecond)
		waitExpired(t, d, old.ID)
		wantStale(t, finish(t, d, fencedtype.JobEnd{Ref: old, Kind: fencedtype.EndComplete})[0], fencedtype.ReasonExpired, 1, "")
		if n, err := d.RecoverJobs(ctx, nil, 10, noBackoff); err != nil || n != 1 {
			t.Fatalf("recover: %d, %v", n, err)
		}
		again := claim(t, d, "q", "w2", 1, time.Hour)
		if len(again) != 1 || again[0].Fence != 2 || again[0].Attempt != 2 {
			t.Fatalf("re-claim: %+v", again)
		}
		wantStale(t, finish(t, d, fencedtype.JobEnd{Ref: old, Kind: fencedtype.EndComplete})[0], fencedtype.ReasonSuperseded, 2, "w2")
		if _, err := d.ReportProgress(ctx, old, []byte(`{}`)); !errors.Is(err, fencedtype.ErrStale) {
			t.Fatalf("stale progress: %v", err)
		}
		cur := fencedtype.JobRef{ID: old.ID, Fence: 2}
		if err := finish(t, d, fencedtype.JobEnd{Ref: cur, Kind: fencedtype.EndComplete})[0]; err != nil {
			t.Fatalf("current attempt's finish: %v", err)
		}
		j, attempts := getJob(t, d, old.ID)
		if j.State != fencedtype.JobSucceeded || !slices.Equal(outcomes(attempts), []string{fencedtype.OutcomeLost, fencedtype.OutcomeSucceeded}) {
			t.Fatalf("job %+v history %+v", j, attempts)
		}
		if attempts[0].Owner != "w1" || attempts[1].Owner != "w2" || attempts[1].Fence != 2 {
			t.Fatalf("history %+v", attempts)
		}
	})

	t.Run("ProgressOfTheRunningAttempt", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		ref := claimOne(t, d, 3, "w", time.Hour)
		if _, err := d.ReportProgress(ctx, ref, []byte(`{"done":3}`)); err != nil {
			t.Fatal(err)
		}
		j, attempts := getJob(t, d, ref.ID)
		if string(j.Progress) != `{"done":3}` {
			t.Fatalf("progress %s", j.Progress)
		}
		if len(attempts) != 1 || attempts[0].Outcome != string(fencedtype.JobRunning) || attempts[0].Fence != ref.Fence {
			t.Fatalf("history of a running job %+v", attempts)
		}
		if _, err := d.ReportProgress(ctx, fencedtype.JobRef{ID: 9999, Fence: 1}, []byte(`{}`)); !errors.Is(err, fencedtype.ErrNotFound) {
			t.Fatalf("progress of an unknown job: %v", err)
		}
	})
}

func TestJobTx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setup := func(t *testing.T) (*sqlitedriver.Driver, fencedtype.JobRef) {
		d, _ := setupJobs(t)
		if _, err := d.DB().ExecContext(ctx, `CREATE TABLE effects (job_id INTEGER, v TEXT)`); err != nil {
			t.Fatal(err)
		}
		return d, claimOne(t, d, 3, "w", time.Hour)
	}
	effects := func(t *testing.T, d *sqlitedriver.Driver) int {
		var n int
		if err := d.DB().QueryRowContext(ctx, `SELECT count(*) FROM effects`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("CommitsBusinessWritesAndCompletion", func(t *testing.T) {
		t.Parallel()
		d, ref := setup(t)
		err := d.JobTx(ctx, ref, func(tx driver.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO effects VALUES (?1, 'x')`, ref.ID); err != nil {
				return err
			}
			errs, _, err := d.EndJobs(ctx, tx, []fencedtype.JobEnd{{Ref: ref, Kind: fencedtype.EndComplete}})
			if err != nil {
				return err
			}
			return errs[0]
		})
		if err != nil {
			t.Fatal(err)
		}
		if j, _ := getJob(t, d, ref.ID); j.State != fencedtype.JobSucceeded || effects(t, d) != 1 {
			t.Fatalf("state %s, %d effects", j.State, effects(t, d))
		}
		called := false
		err = d.JobTx(ctx, ref, func(driver.Tx) error { called = true; return nil })
		wantStale(t, err, fencedtype.ReasonNotRunning, 1, "")
		if called {
			t.Fatal("fn ran after a failed guard")
		}
	})

	t.Run("ErrorRollsBackEverything", func(t *testing.T) {
		t.Parallel()
		d, ref := setup(t)
		boom := errors.New("boom")
		err := d.JobTx(ctx, ref, func(tx driver.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO effects VALUES (?1, 'x')`, ref.ID); err != nil {
				return err
			}
			if _, _, err := d.EndJobs(ctx, tx, []fencedtype.JobEnd{{Ref: ref, Kind: fencedtype.EndComplete}}); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("got %v, want fn's error", err)
		}
		if j, attempts := getJob(t, d, ref.ID); j.State != fencedtype.JobRunning || len(attempts) != 1 || effects(t, d) != 0 {
			t.Fatalf("after rollback: state %s, history %+v, %d effects", j.State, attempts, effects(t, d))
		}
	})

	t.Run("StaleFenceNeverRunsFn", func(t *testing.T) {
		t.Parallel()
		d, ref := setup(t)
		err := d.JobTx(ctx, fencedtype.JobRef{ID: ref.ID, Fence: ref.Fence - 1}, func(driver.Tx) error {
			t.Error("fn ran under a stale fence")
			return nil
		})
		wantStale(t, err, fencedtype.ReasonSuperseded, ref.Fence, "w")
		err = d.JobTx(ctx, fencedtype.JobRef{ID: 9999, Fence: 1}, func(driver.Tx) error { return nil })
		if !errors.Is(err, fencedtype.ErrNotFound) {
			t.Fatalf("unknown job: %v", err)
		}
	})

	t.Run("GuardJobInTheCallersTransaction", func(t *testing.T) {
		t.Parallel()
		d, ref := setup(t)
		tx, err := d.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if err := d.GuardJob(ctx, tx, ref); err != nil {
			t.Fatal(err)
		}
		stale := d.GuardJob(ctx, tx, fencedtype.JobRef{ID: ref.ID, Fence: ref.Fence + 1})
		wantStale(t, stale, fencedtype.ReasonNeverGranted, ref.Fence, "w")
		errs, _, err := d.EndJobs(ctx, sqlitedriver.WrapTx(tx), []fencedtype.JobEnd{{Ref: ref, Kind: fencedtype.EndComplete}})
		if err != nil || errs[0] != nil {
			t.Fatalf("finish in the caller's tx: %v, %v", err, errs)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if j, _ := getJob(t, d, ref.ID); j.State != fencedtype.JobSucceeded {
			t.Fatalf("state %s", j.State)
		}
	})
}
