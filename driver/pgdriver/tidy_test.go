package pgdriver_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/internal/test/testdb"
)

// churnJobs enqueues, claims and completes n jobs, leaving dead row
// versions and changed rows in fenced_jobs.
func churnJobs(t *testing.T, c *fenced.Client, n int) {
	t.Helper()
	ctx := context.Background()
	ps := make([]fenced.EnqueueParams, n)
	for i := range ps {
		ps[i] = fenced.EnqueueParams{Kind: "k"}
	}
	if _, err := c.EnqueueMany(ctx, nil, ps); err != nil {
		t.Fatal(err)
	}
	jobs, err := c.ClaimJobs(ctx, fenced.DefaultQueue, "A", n, time.Minute)
	if err != nil || len(jobs) != n {
		t.Fatalf("claimed %d of %d: %v", len(jobs), n, err)
	}
	for _, j := range jobs {
		if err := c.CompleteJob(ctx, j.Ref(), nil); err != nil {
			t.Fatal(err)
		}
	}
}

// waitStats waits until fenced_jobs' statistics show rows changed since the
// last analyze: the counters reach them within a second or so of each
// connection's commits.
func waitStats(t *testing.T, d *pgdriver.Driver) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var changed int64
		err := d.Pool().QueryRow(ctx, `SELECT pg_stat_clear_snapshot() IS NULL, n_mod_since_analyze
			FROM pg_stat_user_tables WHERE relid = 'fenced_jobs'::regclass`).Scan(new(bool), &changed)
		if err != nil {
			t.Fatal(err)
		}
		if changed > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("fenced_jobs' statistics never showed the churn")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTidyJobsVacuumsAndAnalyzesPastTheThreshold: below its threshold
// TidyJobs does nothing; past it, fenced_jobs is vacuumed and analyzed, as
// the statistics then show.
func TestTidyJobsVacuumsAndAnalyzesPastTheThreshold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := migratedClient(t)
	d := c.Driver().(*pgdriver.Driver)
	churnJobs(t, c, 50)
	if did, err := d.TidyJobs(ctx, 1_000_000); err != nil || did {
		t.Fatalf("below the threshold: did %v, %v; want nothing done", did, err)
	}
	waitStats(t, d)
	if did, err := d.TidyJobs(ctx, 1); err != nil || !did {
		t.Fatalf("past the threshold: did %v, %v; want the table tidied", did, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var vacuums, analyzes int64
		err := d.Pool().QueryRow(ctx, `SELECT pg_stat_clear_snapshot() IS NULL,
			vacuum_count, analyze_count FROM pg_stat_user_tables WHERE relid = 'fenced_jobs'::regclass`).
			Scan(new(bool), &vacuums, &analyzes)
		if err != nil {
			t.Fatal(err)
		}
		if vacuums+analyzes > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after TidyJobs acted: vacuum_count %d, analyze_count %d", vacuums, analyzes)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTidyJobsLeavesATableItDoesNotOwn: a role that does not own fenced_jobs
// may not vacuum it (VACUUM would only warn); TidyJobs does nothing and
// reports no error.
func TestTidyJobsLeavesATableItDoesNotOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.Postgres(t)
	owner, err := fenced.Open(ctx, db, fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if _, err := owner.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	churnJobs(t, owner, 50)

	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	var b [6]byte
	rand.Read(b[:])
	role := "fenced_worker_" + hex.EncodeToString(b[:])
	base := testdb.PostgresURL()
	testdb.Exec(t, base, `CREATE ROLE `+role+` LOGIN`)
	t.Cleanup(func() {
		testdb.Exec(t, base, `DROP OWNED BY `+role)
		testdb.Exec(t, base, `DROP ROLE `+role)
	})
	testdb.Exec(t, base, `GRANT USAGE ON SCHEMA `+schema+` TO `+role)
	testdb.Exec(t, base, `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA `+schema+` TO `+role)
	u.User = url.User(role)
	worker, err := pgdriver.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	waitStats(t, worker)
	if did, err := worker.TidyJobs(ctx, 1); err != nil || did {
		t.Fatalf("a role that does not own fenced_jobs: did %v, %v; want nothing done and no error", did, err)
	}
}

// TestTidyJobsSpacesTheAnalysesOfABigTable: on a table of many live rows,
// the rows changed must also reach a tenth of them before TidyJobs
// analyzes it again; the vacuum is due at the threshold alone.
func TestTidyJobsSpacesTheAnalysesOfABigTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := migratedClient(t)
	d := c.Driver().(*pgdriver.Driver)
	ps := make([]fenced.EnqueueParams, 3000)
	for i := range ps {
		ps[i] = fenced.EnqueueParams{Kind: "k", Queue: "waiting"}
	}
	if _, err := c.EnqueueMany(ctx, nil, ps); err != nil {
		t.Fatal(err)
	}
	counts := func() (vacuums, analyzes, dead, changed int64) {
		t.Helper()
		err := d.Pool().QueryRow(ctx, `SELECT pg_stat_clear_snapshot() IS NULL, vacuum_count, analyze_count,
			n_dead_tup, n_mod_since_analyze FROM pg_stat_user_tables WHERE relid = 'fenced_jobs'::regclass`).
			Scan(new(bool), &vacuums, &analyzes, &dead, &changed)
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	wait := func(what string, ok func(vacuums, analyzes, dead, changed int64) bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if ok(counts()) {
				return
			}
			if time.Now().After(deadline) {
				v, a, dd, ch := counts()
				t.Fatalf("never %s: vacuums %d, analyzes %d, dead %d, changed %d", what, v, a, dd, ch)
			}
		}
	}
	// The inserts are counted first (a backend reports its counts up to a
	// second after its commits), then analyzed: none is left counted as
	// changed since.
	wait("counted the inserts", func(_, _, _, changed int64) bool { return changed >= 3000 })
	if _, err := d.Pool().Exec(ctx, `VACUUM (ANALYZE) fenced_jobs`); err != nil {
		t.Fatal(err)
	}
	wait("counted the first analysis", func(v, a, _, changed int64) bool { return v >= 1 && a >= 1 && changed == 0 })
	v0, a0, _, _ := counts()
	churnJobs(t, c, 100) // 300 rows changed, 200 dead: past 100, not past 100 + 3,100/10
	wait("counted the churn", func(_, _, dead, changed int64) bool { return dead >= 200 && changed >= 300 })
	if did, err := d.TidyJobs(ctx, 100); err != nil || !did {
		t.Fatalf("TidyJobs: did %v, %v; want a vacuum", did, err)
	}
	wait("counted the vacuum", func(v, _, _, _ int64) bool { return v > v0 })
	if _, a, _, changed := counts(); a != a0 {
		t.Fatalf("analyzed %d more times at %d rows changed; want the table's analysis left for later", a-a0, changed)
	}
}

// TestTidyJobsDoesNotVacuumWhileTheHorizonIsPinned: while a snapshot taken
// before the last vacuum stays open, no row that died since can be removed,
// and TidyJobs does not vacuum again; once it is released, it does.
func TestTidyJobsDoesNotVacuumWhileTheHorizonIsPinned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := migratedClient(t)
	d := c.Driver().(*pgdriver.Driver)
	vacuums := func() int64 {
		t.Helper()
		var n int64
		if err := d.Pool().QueryRow(ctx, `SELECT pg_stat_clear_snapshot() IS NULL, vacuum_count
			FROM pg_stat_user_tables WHERE relid = 'fenced_jobs'::regclass`).Scan(new(bool), &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitVacuums := func(want int64) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); vacuums() < want; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("vacuum_count %d, want %d", vacuums(), want)
			}
		}
	}
	pin, err := d.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pin.Rollback(ctx)
	if _, err := pin.Exec(ctx, `SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`); err != nil {
		t.Fatal(err)
	}
	var pinned string
	if err := pin.QueryRow(ctx, `SELECT backend_xmin::text FROM pg_stat_activity WHERE pid = pg_backend_pid()`).Scan(&pinned); err != nil {
		t.Fatal(err)
	}
	// The database's oldest snapshot must be this one, so that the horizon
	// stays where it is until it is released: a transaction of another
	// test, begun before it, would move the horizon when it ends.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var oldest string
		if err := d.Pool().QueryRow(ctx, `SELECT backend_xmin::text FROM pg_stat_activity
			WHERE backend_xmin IS NOT NULL AND datname = current_database() ORDER BY age(backend_xmin) DESC LIMIT 1`).Scan(&oldest); err != nil {
			t.Fatal(err)
		}
		if oldest == pinned {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("another transaction's snapshot (xmin %s) stayed older than the pin's (%s) for a minute", oldest, pinned)
		}
	}
	churnJobs(t, c, 50)
	waitStats(t, d)
	if did, err := d.TidyJobs(ctx, 1); err != nil || !did {
		t.Fatalf("first tidy: did %v, %v", did, err)
	}
	waitVacuums(1)
	churnJobs(t, c, 50)
	waitStats(t, d)
	if _, err := d.TidyJobs(ctx, 1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the counters show a vacuum within this
	if n := vacuums(); n != 1 {
		t.Fatalf("vacuumed again under the same pinned horizon: vacuum_count %d", n)
	}
	if err := pin.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if did, err := d.TidyJobs(ctx, 1); err != nil || !did {
		t.Fatalf("after the release: did %v, %v", did, err)
	}
	waitVacuums(2)
}
