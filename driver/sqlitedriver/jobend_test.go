package sqlitedriver_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenced/fenced/driver/sqlitedriver"
)

// TestEndJobsLooksUpEachJobByID: the batch end joins its list of ends to
// fenced_jobs. Planned the other way round, it walked every running job and
// scanned the whole list for each: a cost of running jobs × batch size,
// millions of steps for a worker's batch, where it should cost one lookup
// by id per end. The plan must read the list and look each job up by its
// primary key.
func TestEndJobsLooksUpEachJobByID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openJobs(t, filepath.Join(t.TempDir(), "plan.db"))
	rows, err := d.DB().QueryContext(ctx, "EXPLAIN QUERY PLAN "+sqlitedriver.EndJobsSQL,
		`[[1, 1, "complete", null, "", 0, false, null, null, null]]`)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	defer rows.Close()
	var steps []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatalf("scan: %v", err)
		}
		steps = append(steps, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("plan: %v", err)
	}
	plan := strings.Join(steps, "; ")
	if len(steps) != 2 || !strings.HasPrefix(steps[0], "SCAN jsonb_each") ||
		!strings.Contains(steps[1], "SEARCH fenced_jobs USING INTEGER PRIMARY KEY (rowid=?)") {
		t.Fatalf("plan = %s; want the list scanned and each job searched by its primary key", plan)
	}
}
