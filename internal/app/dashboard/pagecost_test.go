package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/app/dashboard"
	"github.com/fenced/fenced/internal/test/testdb"
)

// TestPageCost measures what the job browser's pages take with 100,000
// jobs (1% failed, spread over the ids) on SQLite and PostgreSQL: the
// median of 20 loads of each page, over HTTP. It runs only with
// FENCED_PAGECOST=1:
//
//	FENCED_PAGECOST=1 go test -run TestPageCost -v ./internal/app/dashboard/
func TestPageCost(t *testing.T) {
	if os.Getenv("FENCED_PAGECOST") != "1" {
		t.Skip("set FENCED_PAGECOST=1 to measure")
	}
	for name, url := range map[string]func(testing.TB) string{"sqlite": testdb.SQLite, "postgres": testdb.Postgres} {
		backdate := map[string]func(testing.TB, string, time.Duration){
			"sqlite": testdb.SQLiteBackdate, "postgres": testdb.PostgresBackdate}[name]
		t.Run(name, func(t *testing.T) { pageCost(t, name, url(t), backdate) })
	}
}

func pageCost(t *testing.T, name, dbURL string, backdate func(testing.TB, string, time.Duration)) {
	ctx := context.Background()
	c, err := fenced.Open(ctx, dbURL, fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	const n, batch = 100_000, 1000
	start := time.Now()
	for i := 0; i < n; i += batch {
		ps := make([]fenced.EnqueueParams, batch)
		for k := range ps {
			id := i + k
			ps[k] = fenced.EnqueueParams{Kind: fmt.Sprintf("k%d", id%10), Queue: fmt.Sprintf("q%d", id%3),
				Priority: 1, MaxAttempts: 1, Args: map[string]any{"n": id}}
			if id%100 == 0 {
				ps[k].Priority = 0 // claimed and failed below
			}
		}
		if _, err := c.EnqueueMany(ctx, nil, ps); err != nil {
			t.Fatal(err)
		}
	}
	for q := range 3 {
		for {
			jobs, err := c.ClaimJobs(ctx, fmt.Sprintf("q%d", q), "w", 1000, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			jobs = slices.DeleteFunc(jobs, func(j *fenced.Job) bool { return j.Priority != 0 })
			if len(jobs) == 0 {
				break
			}
			ends := make([]fenced.JobEnd, len(jobs))
			for i, j := range jobs {
				ends[i] = fenced.JobEnd{Ref: j.Ref(), Kind: fenced.EndFail, Error: "boom"}
			}
			if _, _, err := c.EndJobs(ctx, nil, ends); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%s: filled %d jobs in %s", name, n, time.Since(start).Round(time.Millisecond))
	counts, _ := c.CountJobs(ctx)
	t.Logf("counts: %v", counts)

	// The charts: what the fill did, moved two minutes back, rolled up (an
	// hour of minutes, one of them with the 1,000 failed jobs).
	backdate(t, dbURL, 2*time.Minute)
	t0 := time.Now()
	rolled, err := c.RollupJobMinutes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: rolled up %d minutes in %s", name, rolled, time.Since(t0).Round(10*time.Microsecond))

	ts := httptest.NewServer(dashboard.New(c, nil, dashboard.Options{}))
	defer ts.Close()
	failed, err := c.ListJobs(ctx, fenced.JobFilter{State: fenced.JobFailed, Limit: 1})
	if err != nil || len(failed) == 0 {
		t.Fatalf("no failed job: %v", err)
	}
	for _, path := range []string{
		"/jobs",
		"/jobs?before=50000",
		"/jobs?after=50000",
		"/jobs?state=failed",
		"/jobs?state=failed&before=50000",
		"/jobs?kind=k7&queue=q1",
		"/jobs?state=failed&kind=k3&queue=q2", // no job matches: the whole table is read
		fmt.Sprintf("/jobs/%d", failed[0].ID),
		"/jobs/50001",
		"/",
		"/charts",
		"/charts?queue=q1",
	} {
		var took []time.Duration
		for range 20 {
			t0 := time.Now()
			resp, err := http.Get(ts.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("GET %s = %d", path, resp.StatusCode)
			}
			took = append(took, time.Since(t0))
		}
		slices.Sort(took)
		t.Logf("%s %-40s median %8s  max %8s", name, path, took[len(took)/2].Round(10*time.Microsecond), took[len(took)-1].Round(10*time.Microsecond))
	}
}
