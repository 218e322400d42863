package jobbench

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/internal/test/testdb"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// counts returns the jobs of queue by state.
func counts(t *testing.T, url, queue string) map[fenced.JobState]int64 {
	t.Helper()
	c, err := fenced.Open(ctx(t), url, fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	all, err := c.CountJobs(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	out := map[fenced.JobState]int64{}
	for _, n := range all {
		if n.Queue == queue {
			out[n.State] = n.Count
		}
	}
	return out
}

func enqueue(t *testing.T, url string, p fenced.EnqueueParams) {
	t.Helper()
	c, err := fenced.Open(ctx(t), url, fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Migrate(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Enqueue(ctx(t), p); err != nil {
		t.Fatal(err)
	}
}

func wantBurnDown(t *testing.T, res *Result, backend string, jobs int64) {
	t.Helper()
	if res.Mode != BurnDown || res.Backend != backend || res.Jobs != jobs || res.Inserted != jobs {
		t.Fatalf("result = %+v", res)
	}
	if res.JobsPerSec <= 0 || res.InsertPerSec <= 0 || res.Seconds <= 0 {
		t.Fatalf("rates = %+v", res)
	}
	if res.Retried+res.Stale+res.Lost != 0 {
		t.Fatalf("attempts that did not succeed at once: %+v", res)
	}
}

func TestBurnDownOnAFreshSQLiteFile(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var phases []string
	res, err := Run(ctx(t), Options{Jobs: 300, Concurrency: 20, ProgressEvery: time.Millisecond,
		Progress: func(s Snapshot) {
			mu.Lock()
			defer mu.Unlock()
			if len(phases) == 0 || phases[len(phases)-1] != s.Phase {
				phases = append(phases, s.Phase)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	wantBurnDown(t, res, "sqlite", 300)
	if res.PoolConns != 0 || res.Queue != DefaultQueue || res.Concurrency != 20 {
		t.Fatalf("result = %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(phases, ",") != "insert,work" && strings.Join(phases, ",") != "work" {
		t.Fatalf("progress phases = %v", phases)
	}
}

func TestBurnDownCleansUpOnlyItsJobs(t *testing.T) {
	t.Parallel()
	for _, db := range []struct {
		backend string
		url     func(testing.TB) string
	}{{"postgres", testdb.Postgres}, {"mysql", testdb.MySQL}} {
		t.Run(db.backend, func(t *testing.T) {
			t.Parallel()
			url := db.url(t)
			enqueue(t, url, fenced.EnqueueParams{Kind: "real"}) // another queue: untouched
			res, err := Run(ctx(t), Options{URL: url, Jobs: 500, Concurrency: 50, Instances: 2, PoolConns: 3})
			if err != nil {
				t.Fatal(err)
			}
			wantBurnDown(t, res, db.backend, 500)
			if res.PoolConns != 3 || res.Instances != 2 {
				t.Fatalf("result = %+v", res)
			}
			// Each job's claim, end and history row write WAL; the
			// whole server's WAL is read, so only a floor is certain.
			if db.backend == "postgres" && res.WALPerJob < 100 {
				t.Fatalf("WAL per job %.0f bytes on PostgreSQL; want each job's writes counted", res.WALPerJob)
			}
			if db.backend != "postgres" && res.WALPerJob != 0 {
				t.Fatalf("WAL per job %.0f on %s; want none reported", res.WALPerJob, db.backend)
			}
			// 500 jobs take at least one claim and one end statement;
			// claims and ends are batched, so fewer than one of each a job.
			if w := res.DBWork; db.backend == "postgres" && (w == nil || w.Statements*500 < 2 || w.RoundTrips > w.Statements || w.Statements > 4) {
				t.Fatalf("database work %+v on PostgreSQL", w)
			}
			if db.backend != "postgres" && res.DBWork != nil {
				t.Fatalf("database work %+v on %s; want none reported", res.DBWork, db.backend)
			}
			if n := counts(t, url, DefaultQueue); len(n) != 0 {
				t.Fatalf("the benchmark's jobs were left behind: %v", n)
			}
			if n := counts(t, url, fenced.DefaultQueue); n[fenced.JobQueued] != 1 {
				t.Fatalf("another queue's job was touched: %v", n)
			}
		})
	}
}

// Alone in its table on PostgreSQL, the benchmark truncates it rather than
// deleting row by row; ids still never go back.
func TestBurnDownAloneTruncates(t *testing.T) {
	t.Parallel()
	url := testdb.Postgres(t)
	c, err := fenced.Open(ctx(t), url, fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Migrate(ctx(t)); err != nil {
		t.Fatal(err)
	}
	pool := c.Driver().(*pgdriver.Driver).Pool()
	filenode := func() (n int64) {
		t.Helper()
		if err := pool.QueryRow(ctx(t), `SELECT pg_relation_filenode('fenced_jobs')::bigint`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := filenode()
	if _, err := Run(ctx(t), Options{URL: url, Jobs: 300, Concurrency: 20}); err != nil {
		t.Fatal(err)
	}
	if filenode() == before { // a TRUNCATE gives the table a new file
		t.Fatal("the table was not truncated")
	}
	if n, err := c.CountJobs(ctx(t)); err != nil || len(n) != 0 {
		t.Fatalf("jobs left: %v, %v", n, err)
	}
	j, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "real"})
	if err != nil || j.ID <= 300 {
		t.Fatalf("job after the run: %+v, %v; want an id past the benchmark's 300", j, err)
	}
}

func TestKeepLeavesTheJobsSucceeded(t *testing.T) {
	t.Parallel()
	url := testdb.SQLite(t)
	for range 2 { // finished jobs of an earlier run do not stand in the way
		if _, err := Run(ctx(t), Options{URL: url, Jobs: 50, Concurrency: 5, Queue: "kept", Keep: true}); err != nil {
			t.Fatal(err)
		}
	}
	if n := counts(t, url, "kept"); n[fenced.JobSucceeded] != 100 || len(n) != 1 {
		t.Fatalf("counts = %v", n)
	}
}

func TestAQueueWithUnfinishedJobsIsRefused(t *testing.T) {
	t.Parallel()
	url := testdb.SQLite(t)
	enqueue(t, url, fenced.EnqueueParams{Kind: "real", Queue: DefaultQueue})
	_, err := Run(ctx(t), Options{URL: url, Jobs: 10})
	if err == nil || !strings.Contains(err.Error(), "1 unfinished jobs") {
		t.Fatalf("err = %v", err)
	}
	if n := counts(t, url, DefaultQueue); n[fenced.JobQueued] != 1 || len(n) != 1 {
		t.Fatalf("the queue was touched: %v", n)
	}
}

func TestContinuousWorksWhileTheProducerInserts(t *testing.T) {
	t.Parallel()
	url := testdb.SQLite(t)
	res, err := Run(ctx(t), Options{URL: url, Duration: time.Second, Backlog: 200, Concurrency: 10,
		Window: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != Continuous || res.Jobs == 0 || res.Inserted == 0 || res.Seconds < 1 {
		t.Fatalf("result = %+v", res)
	}
	// Each window reports the jobs inserted and not yet worked, the
	// starting backlog included. A window of a loaded machine may work
	// nothing (the first 200 ms, say); the run as a whole did.
	if len(res.Windows) != 5 || res.Steadiness <= 0 {
		t.Fatalf("windows %+v, steadiness %v", res.Windows, res.Steadiness)
	}
	for _, w := range res.Windows {
		if w.Backlog < 0 || w.JobsPerSec < 0 {
			t.Fatalf("window %+v", w)
		}
	}
	if n := counts(t, url, DefaultQueue); len(n) != 0 {
		t.Fatalf("the benchmark's jobs were left behind: %v", n)
	}
}

func TestInvalidOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{{Duration: -time.Second}, {FetchBatch: fenced.MaxClaimBatch + 1}} {
		if _, err := Run(ctx(t), o); err == nil || !strings.Contains(err.Error(), "invalid") {
			t.Fatalf("%+v: err = %v", o, err)
		}
	}
}

func TestPrinter(t *testing.T) {
	t.Parallel()
	s := Snapshot{Phase: "work", Elapsed: 1500 * time.Millisecond, Done: 50, Total: 200, Rate: 33.3}
	var plain strings.Builder
	p := &Printer{W: &plain}
	p.Print(s)
	p.Print(s)
	p.Clear()
	want := "bench: work      1.5s  worked 50/200 (25%)  33 jobs/s\n"
	if plain.String() != want+want {
		t.Fatalf("plain = %q", plain.String())
	}
	var tty strings.Builder
	p = &Printer{W: &tty, TTY: true}
	p.Print(s)
	p.Print(Snapshot{Phase: "work", Done: 1})
	p.Clear()
	got := tty.String()
	if !strings.HasPrefix(got, "\r"+strings.TrimSuffix(want, "\n")+"\r") || strings.Contains(got, "\n") ||
		!strings.HasSuffix(got, "\r") {
		t.Fatalf("tty = %q", got)
	}
}

func TestResultLine(t *testing.T) {
	t.Parallel()
	r := &Result{Mode: BurnDown, Backend: "postgres", Jobs: 100000, Seconds: 6.52, JobsPerSec: 15337,
		InsertPerSec: 45000, Concurrency: 2000, Instances: 1, PoolConns: 4}
	want := "bench: burn-down 100000 jobs in 6.52s = 15337 jobs/s (insert 45000 jobs/s) backend=postgres workers=2000 pool=4"
	if r.String() != want {
		t.Fatalf("line = %q", r.String())
	}
	r = &Result{Mode: Continuous, Backend: "sqlite", Jobs: 3000, Seconds: 30, JobsPerSec: 100, Inserted: 3100,
		InsertPerSec: 103.3, Concurrency: 2000, Instances: 2, Stale: 1}
	want = "bench: continuous 30.0s: worked 3000 = 100 jobs/s, inserted 3100 = 103 jobs/s backend=sqlite workers=2000 instances=2 (retried=0 stale=1 lost=0)"
	if r.String() != want {
		t.Fatalf("line = %q", r.String())
	}
}
