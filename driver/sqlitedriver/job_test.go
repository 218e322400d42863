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

// endJobs ends attempts and returns their per-job errors.
func endJobs(t *testing.T, d *sqlitedriver.Driver, ends ...fencedtype.JobEnd) []error {
	t.Helper()
	errs, _, err := d.EndJobs(context.Background(), nil, ends)
	if err != nil {
		t.Fatalf("end jobs: %v", err)
	}
	if len(errs) != len(ends) {
		t.Fatalf("end jobs: %d results for %d ends", len(errs), len(ends))
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
			t.Fatalf("end in the caller's tx: %v, %v", err, errs)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if j, _ := getJob(t, d, ref.ID); j.State != fencedtype.JobSucceeded {
			t.Fatalf("state %s", j.State)
		}
	})
}
