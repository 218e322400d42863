package mysqldriver_test

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/fenced/fenced/driver/mysqldriver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/test/testdb"
)

// A page of one state's jobs reads the (state, lease_expires_at, id) index
// in id order, without sorting the state's jobs, also beside many jobs of
// another state: jobs not running have no lease, and the listing says so
// (ListJobs adds lease_expires_at IS NULL), which makes the index's
// entries of the state an id range (migration 9).
func TestAPageOfAStateReadsItsIndexInIDOrder(t *testing.T) {
	t.Parallel()
	url, _ := setup(t)
	db := openDB(t, url)
	testdb.MySQLExec(t, url, `INSERT INTO fenced_jobs (kind, queue, args, state, run_at, attempt, max_attempts, fence, owner,
		created_at, updated_at, attempted_at, finished_at)
		WITH d (i) AS (SELECT 0 UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
			UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)
		SELECT 'k', 'q', '{}', IF(a.i = 0 AND b.i = 0, 'failed', 'succeeded'), UTC_TIMESTAMP(6), 1, 1, 1, 'w',
			UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) FROM d a, d b, d c, d e`)
	testdb.MySQLExec(t, url, `ANALYZE TABLE fenced_jobs`)
	for _, desc := range []bool{false, true} {
		query, args := mysqldriver.ListJobsSQL(fencedtype.JobFilter{State: fencedtype.JobFailed, Limit: 50, Desc: desc})
		plan := explainMySQL(t, db, query, args...)
		if !strings.Contains(plan, "fenced_jobs_state") || strings.Contains(plan, "filesort") {
			t.Errorf("a page of failed jobs (descending %v) does not read the state index in id order:\n%s", desc, plan)
		}
	}
}

// explainMySQL is the key and extra columns of each row of EXPLAIN query.
func explainMySQL(t *testing.T, db *sql.DB, query string, args ...any) string {
	t.Helper()
	rows, err := db.QueryContext(ctx(t), "EXPLAIN "+query, args...)
	must(t, err, "explain")
	defer rows.Close()
	cols, err := rows.Columns()
	must(t, err, "explain columns")
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		must(t, rows.Scan(ptrs...), "scan explain")
		var line []string
		for i, c := range cols {
			if c == "key" || c == "Extra" || c == "type" {
				line = append(line, c+"="+vals[i].String)
			}
		}
		out = append(out, strings.Join(line, " "))
	}
	must(t, rows.Err(), "explain rows")
	return strings.Join(out, "\n")
}
