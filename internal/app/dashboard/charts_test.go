package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/app/dashboard"
	"github.com/fenced/fenced/internal/test/testdb"
)

// TestCharts, on SQLite and PostgreSQL: /charts draws the rolled-up hour — jobs per minute, queue
// depth, claim-wait percentiles and stale refusals — for every queue or
// one, says so when nothing is rolled up yet, and carries no script.
func TestCharts(t *testing.T) {
	t.Parallel()
	for _, b := range []struct {
		name     string
		db       func(testing.TB) string
		backdate func(testing.TB, string, time.Duration)
	}{
		{"sqlite", testdb.SQLite, testdb.SQLiteBackdate},
		{"postgres", testdb.Postgres, testdb.PostgresBackdate},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			charts(t, b.db(t), b.backdate)
		})
	}
}

func charts(t *testing.T, db string, backdate func(testing.TB, string, time.Duration)) {
	stale := map[time.Time]int64{}
	e := setupOn(t, db, nil, dashboard.Options{StaleMinutes: func() map[time.Time]int64 { return stale }})
	ctx := context.Background()

	_, _, body := get(t, e.url+"/charts")
	if !strings.Contains(body, "No minute of this hour is rolled up yet") {
		t.Fatalf("before any rollup, /charts does not say so:\n%s", body)
	}

	e.scenario()
	// The scenario happened three minutes ago, so that its minutes are
	// over and rolled up.
	backdate(t, e.db, 3*time.Minute)
	if n, err := e.c.RollupJobMinutes(ctx); err != nil || n < 60 {
		t.Fatalf("rollup: %d minutes, %v", n, err)
	}
	now, err := e.c.DatabaseTime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := now.Add(-fenced.RollupGrace).Truncate(time.Minute).Add(-time.Minute)
	stale[last] = 4

	for _, c := range []struct {
		path string
		want []string
	}{
		{"/charts", []string{"In the hour: 3 succeeded, 1 failed, 1 retried, 0 lost.", "1 queued at",
			"In the hour: 4. Writes this server refused", "In the hour: p50 ≤ ", `class="on">all</a>`}},
		{"/charts?queue=mail", []string{"In the hour: 3 succeeded, 0 failed, 0 retried, 0 lost.", "1 queued at",
			`class="on">mail</a>`, "of queue <code>mail</code>"}},
		{"/charts?queue=reports", []string{"In the hour: 0 succeeded, 1 failed, 1 retried, 0 lost.", "0 queued at"}},
	} {
		status, _, body := get(t, e.url+c.path)
		if status != 200 {
			t.Fatalf("GET %s = %d", c.path, status)
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s lacks %q", c.path, w)
			}
		}
		if n := strings.Count(body, `<svg class="chart"`); n != 4 {
			t.Errorf("GET %s has %d charts, want 4", c.path, n)
		}
		if strings.Contains(body, "<script") || !strings.Contains(body, "60 minutes rolled up") {
			t.Errorf("GET %s: a script, or no rollup line:\n%s", c.path, body)
		}
		if t.Failed() {
			t.Fatalf("GET %s:\n%s", c.path, body)
		}
	}
	if status, _, body := get(t, e.url+"/charts?queue="+strings.Repeat("q", 101)); status != 400 || !strings.Contains(body, "at most 100 bytes") {
		t.Fatalf("GET /charts with a 101-byte queue = %d:\n%s", status, body)
	}
}
