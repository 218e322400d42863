package demo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fenced/fenced"
	_ "github.com/fenced/fenced/driver/all"
	"github.com/fenced/fenced/driver/mysqldriver"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/driver/sqlitedriver"
	"github.com/fenced/fenced/internal/app/demo"
	"github.com/fenced/fenced/internal/test/testdb"
)

// left counts what a demo run can leave in the database at url: leases,
// jobs (with attempts), resources (with operation ids) and demo tables.
func left(t *testing.T, url string) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	c, err := fenced.Open(ctx, url, fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tables := map[fenced.Dialect]string{
		fenced.DialectSQLite:   `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name LIKE 'fenced_demo%'`,
		fenced.DialectPostgres: `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE 'fenced_demo%'`,
		fenced.DialectMySQL:    `SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE 'fenced_demo%'`,
	}[c.Driver().Dialect()]
	out := map[string]int64{}
	for what, q := range map[string]string{
		"leases":        `SELECT count(*) FROM fenced_leases`,
		"jobs":          `SELECT count(*) FROM fenced_jobs`,
		"attempts":      `SELECT count(*) FROM fenced_job_attempts`,
		"resources":     `SELECT count(*) FROM fenced_resources`,
		"operation ids": `SELECT count(*) FROM fenced_resource_ops`,
		"demo tables":   tables,
	} {
		var n int64
		switch d := c.Driver().(type) {
		case *pgdriver.Driver:
			err = d.Pool().QueryRow(ctx, q).Scan(&n)
		case *sqlitedriver.Driver:
			err = d.DB().QueryRowContext(ctx, q).Scan(&n)
		case *mysqldriver.Driver:
			err = d.DB().QueryRowContext(ctx, q).Scan(&n)
		}
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out[what] = n
	}
	return out
}

// A demo run in a database of the user's removes everything it created
// there, and with Keep leaves it and says what it is.
func TestDemoCleansUpAfterItself(t *testing.T) {
	t.Parallel()
	for name, url := range map[string]func(testing.TB) string{
		"SQLite":   testdb.SQLite,
		"Postgres": testdb.Postgres,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			u := url(t)
			out := runDemo(t, u, demo.Names()...)
			for what, n := range left(t, u) {
				if n != 0 {
					t.Errorf("%d %s left after the demo", n, what)
				}
			}
			if !strings.Contains(out, "removed what the demo created: 16 jobs in 7 demo-* queues, 1 lease, 2 resources, 2 tables") &&
				!strings.Contains(out, "removed what the demo created: 15 jobs in 6 demo-* queues, 1 lease, 2 resources, 2 tables") {
				t.Errorf("output does not say what was removed:\n%s", out)
			}
		})
	}
	t.Run("Keep", func(t *testing.T) {
		t.Parallel()
		u := testdb.SQLite(t)
		var out strings.Builder
		ok, err := demo.Run(context.Background(), demo.Options{URL: u, Out: &out, Keep: true}, "stale-writer", "check-then-act")
		if !ok || err != nil {
			t.Fatalf("demo: %v %v\n%s", ok, err, out.String())
		}
		got := left(t, u)
		if got["leases"] != 1 || got["jobs"] != 1 || got["resources"] != 2 || got["demo tables"] != 1 {
			t.Errorf("with Keep, left %v", got)
		}
		for _, want := range []string{"kept (--keep):\n  leases     report-", "\n  queues     demo-check-then-act-", "\n  tables     fenced_demo_naive_jobs_"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out.String())
			}
		}
	})
}
