package sqlitedriver_test

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/sqlitedriver"
	"github.com/fenced/fenced/fencedtype"
)

// beforeRebuild is the schema version just before the jobs table was
// rebuilt for its NULL-safe checks (migration 10).
const beforeRebuild = 9

// TestJobTableRebuildKeepsEveryRowAndPassesIntegrityCheck: a database
// migrated up to the rebuild, with jobs in every state (with and
// without output, progress, keys and attempts), is migrated on. Its checks
// on the nullable JSON columns then accept NULL in any SQLite, so the
// stock sqlite3 CLI's PRAGMA integrity_check (3.40 on Debian 12, where
// json_valid(NULL) is 0) says ok instead of "CHECK constraint failed";
// every row, every attempt, the id sequence and the other schema objects
// (the indexes, exactly) are as they were.
func TestJobTableRebuildKeepsEveryRowAndPassesIntegrityCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	d, err := sqlitedriver.Open(ctx, path)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer d.Close()
	if _, err := d.MigrateTo(ctx, beforeRebuild); err != nil {
		t.Fatalf("migrate to %d: %v", beforeRebuild, err)
	}
	// The driver of today reads and writes the columns later migrations
	// add (metadata, migration 11; tags, 12; unique_key, unique_bucket and
	// unique_states, 13; policy, 14; the workflow's, 15): they are added
	// here for the jobs to be written, NULL (or their default) in every row
	// as on a real database of version 9. The rebuild copies the columns of
	// version 9 and the later migrations add them again, so every row
	// compares equal below.
	for _, col := range append([]string{"metadata TEXT", "tags TEXT", "unique_key BLOB", "unique_bucket INTEGER", "unique_states INTEGER", "policy TEXT"},
		workflowColumns...) {
		if _, err := d.DB().ExecContext(ctx, `ALTER TABLE fenced_jobs ADD COLUMN `+col); err != nil {
			t.Fatalf("add the later column %s: %v", col, err)
		}
	}
	jobsInEveryState(t, d)
	before := schemaAndRows(t, d.DB())
	var seq, withAttempts int64
	if err := d.DB().QueryRowContext(ctx, `SELECT seq FROM sqlite_sequence WHERE name = 'fenced_jobs'`).Scan(&seq); err != nil {
		t.Fatalf("sequence: %v", err)
	}
	if err := d.DB().QueryRowContext(ctx, `SELECT max(job_id) FROM fenced_job_attempts`).Scan(&withAttempts); err != nil {
		t.Fatalf("attempts: %v", err)
	}

	applied, err := d.Migrate(ctx)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if len(applied) == 0 || applied[0] != beforeRebuild+1 {
		t.Fatalf("migrate applied %v, want the versions after %d", applied, beforeRebuild)
	}
	after := schemaAndRows(t, d.DB())
	for name, want := range before {
		if name == "table fenced_jobs" {
			continue // its checks changed; its columns are compared below
		}
		if got := after[name]; got != want {
			t.Errorf("%s changed:\nbefore %s\nafter  %s", name, want, got)
		}
	}
	for name := range after {
		// Unique jobs' index (migration 13) and the workflows' objects
		// (15) are new by design.
		if _, ok := before[name]; !ok && !strings.HasPrefix(name, "row fenced_schema_migrations") && name != "index fenced_jobs_unique" &&
			!slices.Contains(workflowObjects, name) {
			t.Errorf("migrating added %s: %s", name, after[name])
		}
	}
	wantNullSafeJSONChecks(t, d.DB())
	var fkOn bool
	if err := d.DB().QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fkOn); err != nil || !fkOn {
		t.Errorf("foreign keys after migrating: on = %v, %v", fkOn, err)
	}

	// The sequence goes on from where the old table's was, above every id.
	res, err := d.Enqueue(ctx, nil, []driver.EnqueueParams{newJob("after")})
	if err != nil {
		t.Fatalf("enqueue after migrating: %v", err)
	}
	if res[0].Job.ID <= seq {
		t.Errorf("a job enqueued after migrating got id %d, not above the sequence %d it had", res[0].Job.ID, seq)
	}
	// The attempts' reference follows to the new table: deleting a job
	// deletes its attempts.
	if err := d.DeleteJob(ctx, withAttempts); err != nil {
		t.Fatalf("delete job %d: %v", withAttempts, err)
	}
	var orphans int
	if err := d.DB().QueryRowContext(ctx, `SELECT count(*) FROM fenced_job_attempts WHERE job_id = ?1`, withAttempts).Scan(&orphans); err != nil || orphans != 0 {
		t.Errorf("attempts of a deleted job: %d, %v; want the cascade to delete them", orphans, err)
	}

	wantIntegrityOK(t, d.DB())
	if err := d.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	cliIntegrityOK(t, path)
}

// workflowColumns are the columns migration 15 adds to the jobs table, as
// ALTER TABLE would add them (pragma_table_xinfo shows them as the rebuilt
// table has them).
var workflowColumns = []string{"workflow_id INTEGER", "task_name TEXT", "deps_waiting INTEGER NOT NULL DEFAULT 0",
	"deps_failed INTEGER NOT NULL DEFAULT 0", "run_anyway INTEGER NOT NULL DEFAULT 0", "workflow_cancelled INTEGER NOT NULL DEFAULT 0"}

// workflowObjects are the schema objects migration 15 makes besides the
// jobs table's, by schemaAndRows' names.
var workflowObjects = []string{"table fenced_workflows", "index fenced_workflows_name", "table fenced_job_deps",
	"index fenced_job_deps_job", "index fenced_jobs_task"}

// TestMigrationsLeaveForeignKeysOn: the connection Migrate turned foreign
// keys off on is back on before any other statement uses it, so deleting a
// job still deletes its attempts on every pooled connection.
func TestMigrationsLeaveForeignKeysOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openJobs(t, filepath.Join(t.TempDir(), "fk.db"))
	db := d.DB()
	var conns []*sql.Conn
	for range 8 { // the pool's size: every connection, the migration's among them
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatalf("conn: %v", err)
		}
		conns = append(conns, conn)
		var on bool
		if err := conn.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&on); err != nil || !on {
			t.Errorf("connection %d: foreign keys on = %v, %v", len(conns), on, err)
		}
	}
	for _, c := range conns {
		c.Close()
	}
}

// jobsInEveryState fills d with jobs queued (now, later, keyed, with an
// idempotency key), running (with and without progress), succeeded (with
// and without output), failed, retried, snoozed and cancelled, and moves
// the id sequence past the largest id with a fence advance.
func jobsInEveryState(t *testing.T, d *sqlitedriver.Driver) {
	t.Helper()
	ctx := context.Background()
	keyed := newJob("keyed")
	keyed.ConcurrencyKey, keyed.SequenceKey, keyed.SequenceContinueOnFailed = "k", "s", true
	keyed.IdempotencyKey, keyed.Priority = "once", 3
	later := newJob("later")
	later.Delay = time.Hour
	enqueue(t, d, newJob("queued"), keyed, later)

	claimed := func(n int) []fencedtype.JobRef {
		jobs := enqueue(t, d, slices.Repeat([]driver.EnqueueParams{newJob("work")}, n)...)
		got := claim(t, d, "work", "w1", n, time.Hour)
		if len(got) != n {
			t.Fatalf("claimed %d of %d jobs", len(got), len(jobs))
		}
		refs := make([]fencedtype.JobRef, n)
		for i, j := range got {
			refs[i] = fencedtype.JobRef{ID: j.ID, Fence: j.Fence}
		}
		return refs
	}
	refs := claimed(8)
	if _, err := d.ReportProgress(ctx, refs[0], []byte(`{"done":1}`)); err != nil {
		t.Fatalf("progress: %v", err)
	}
	// refs[0] and refs[1] stay running.
	errs := endJobs(t, d,
		fencedtype.JobEnd{Ref: refs[2], Kind: fencedtype.EndComplete, Output: []byte(`{"ok":true}`)},
		fencedtype.JobEnd{Ref: refs[3], Kind: fencedtype.EndComplete},
		fencedtype.JobEnd{Ref: refs[4], Kind: fencedtype.EndFail, Error: "boom", Discard: true},
		fencedtype.JobEnd{Ref: refs[5], Kind: fencedtype.EndFail, Error: "again", Delay: time.Hour},
		fencedtype.JobEnd{Ref: refs[6], Kind: fencedtype.EndSnooze, Delay: time.Hour},
		fencedtype.JobEnd{Ref: refs[7], Kind: fencedtype.EndCancel, Error: "asked"},
	)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("end %d: %v", i, err)
		}
	}
	if _, err := d.CancelJob(ctx, 1); err != nil {
		t.Fatalf("cancel queued job: %v", err)
	}
	if _, err := d.AdvanceFences(ctx, 1000); err != nil {
		t.Fatalf("advance: %v", err)
	}
	states := map[string]int{}
	rows, err := d.DB().QueryContext(ctx, `SELECT state || CASE WHEN output IS NULL THEN '' ELSE '+output' END
		|| CASE WHEN progress IS NULL THEN '' ELSE '+progress' END FROM fenced_jobs`)
	if err != nil {
		t.Fatalf("states: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		rows.Scan(&s)
		states[s]++
	}
	for _, want := range []string{"queued", "running", "running+progress", "succeeded", "succeeded+output", "failed", "cancelled"} {
		if states[want] == 0 {
			t.Fatalf("no job %s among %v", want, states)
		}
	}
}

// schemaAndRows describes every schema object but the migrations' own
// table (by type and name: its SQL; the jobs table: its columns), every
// row of the fenced tables and the id sequences, each under a name.
func schemaAndRows(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	read := func(name, query string) {
		rows, err := db.QueryContext(ctx, query)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		for i := 0; rows.Next(); i++ {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for j := range vals {
				ptrs[j] = &vals[j]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
			key, val := name, showRow(vals)
			if name == "" { // the first column names the row
				key, val = fmt.Sprint(vals[0]), showRow(vals[1:])
			} else {
				key = fmt.Sprintf("%s %d", name, i)
			}
			out[key] = val
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	read("", `SELECT type || ' ' || name, tbl_name, sql FROM sqlite_schema WHERE name != 'fenced_schema_migrations'`)
	read("", `SELECT 'sequence ' || name, seq FROM sqlite_sequence`)
	read("columns fenced_jobs", `SELECT cid, name, type, "notnull", dflt_value, pk, hidden FROM pragma_table_xinfo('fenced_jobs')`)
	tables, err := db.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'fenced\_%' ESCAPE '\'`)
	if err != nil {
		t.Fatalf("tables: %v", err)
	}
	var names []string
	for tables.Next() {
		var n string
		tables.Scan(&n)
		names = append(names, n)
	}
	tables.Close()
	for _, n := range names {
		read("row "+n, `SELECT * FROM "`+n+`" ORDER BY 1, 2`)
	}
	return out
}

// showRow shows a row's values, text quoted, NULL as NULL.
func showRow(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		switch v := v.(type) {
		case nil:
			parts[i] = "NULL"
		case []byte:
			parts[i] = fmt.Sprintf("%q", v)
		case string:
			parts[i] = fmt.Sprintf("%q", v)
		default:
			parts[i] = fmt.Sprint(v)
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// jsonValidCall finds each json_valid(column) in a table's SQL.
var jsonValidCall = regexp.MustCompile(`json_valid\((\w+)\)`)

// wantNullSafeJSONChecks fails for a check calling json_valid on a column
// that may be NULL without saying first that NULL passes: json_valid(NULL)
// is 0 in older SQLite, so such a check fails there on every NULL.
func wantNullSafeJSONChecks(t *testing.T, db *sql.DB) {
	t.Helper()
	ctx := context.Background()
	rows, err := db.QueryContext(ctx, `SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND sql LIKE '%json_valid%'`)
	if err != nil {
		t.Fatalf("schema: %v", err)
	}
	defer rows.Close()
	checked := 0
	for rows.Next() {
		var table, ddl string
		if err := rows.Scan(&table, &ddl); err != nil {
			t.Fatalf("schema: %v", err)
		}
		for _, m := range jsonValidCall.FindAllStringSubmatch(ddl, -1) {
			col := m[1]
			var notNull bool
			if err := db.QueryRowContext(ctx, `SELECT "notnull" FROM pragma_table_info(?1) WHERE name = ?2`, table, col).Scan(&notNull); err != nil {
				t.Fatalf("column %s.%s: %v", table, col, err)
			}
			checked++
			if !notNull && !strings.Contains(ddl, col+" IS NULL OR json_valid("+col+")") {
				t.Errorf("%s.%s may be NULL, and its check json_valid(%s) does not let NULL pass: older SQLite fails it on every NULL", table, col, col)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no json_valid check found in the schema")
	}
}

// wantIntegrityOK runs PRAGMA integrity_check and foreign_key_check
// through the driver's SQLite.
func wantIntegrityOK(t *testing.T, db *sql.DB) {
	t.Helper()
	ctx := context.Background()
	var got []string
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		t.Fatalf("integrity_check: %v", err)
	}
	for rows.Next() {
		var s string
		rows.Scan(&s)
		got = append(got, s)
	}
	rows.Close()
	if !slices.Equal(got, []string{"ok"}) {
		t.Errorf("integrity_check: %q", got)
	}
	var fk int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_foreign_key_check`).Scan(&fk); err != nil || fk != 0 {
		t.Errorf("foreign_key_check: %d rows, %v", fk, err)
	}
}

// cliIntegrityOK runs PRAGMA integrity_check in the sqlite3 CLI, when one
// is installed (an older SQLite than the driver's, where json_valid(NULL)
// is 0, makes the check meaningful).
func cliIntegrityOK(t *testing.T, path string) {
	t.Helper()
	cli, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Log("no sqlite3 CLI: its integrity_check not run")
		return
	}
	ver, _ := exec.Command(cli, "-version").Output()
	// Not -readonly: a read-only connection's integrity_check skips the
	// CHECK constraints.
	out, err := exec.Command(cli, path, "PRAGMA integrity_check").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Errorf("sqlite3 %s PRAGMA integrity_check: %v\n%s", strings.Fields(string(ver) + " ?")[0], err, out)
	}
}
