package pgdriver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/internal/test/testdb"
)

// The statements that read a batch of attempts by id read them through the
// primary key, also with statistics that put a handful of rows in the
// running-jobs index: between vacuums that index holds an entry for every
// attempt ended since, and a batch read through it is many times slower
// (jobGuard; docs/design.md §10, measurements). The plans are the generic
// ones, which the driver's prepared statements use after a few runs.
func TestBatchesOfAttemptsAreReadByTheirIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated(t, testdb.Postgres(t)).Pool()
	for _, q := range []string{
		`INSERT INTO fenced_jobs (kind, queue, args, state, run_at, attempt, max_attempts, fence, owner,
			created_at, updated_at, attempted_at, finished_at)
		SELECT 'k', 'q', '{}', 'succeeded', now(), 1, 1, 1, 'w', now(), now(), now(), now()
		FROM generate_series(1, 100000)`,
		`INSERT INTO fenced_jobs (kind, queue, args, state, run_at, attempt, max_attempts, fence, owner,
			lease_expires_at, created_at, updated_at, attempted_at)
		SELECT 'k', 'q', '{}', 'running', now(), 1, 1, 1, 'w', now() + interval '1 hour', now(), now(), now()
		FROM generate_series(1, 5)`,
		`ANALYZE fenced_jobs`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	ids, fences := []int64{1, 2}, []int64{1, 1}
	for _, s := range []struct {
		name, sql string
		args      []any
	}{
		{"ends", pgdriver.EndJobsSQL, []any{ids, fences, []string{"complete", "complete"}, []*string{nil, nil},
			[]string{"", ""}, []int64{0, 0}, []bool{false, false}, []*int64{nil, nil}, []int64{0, 0}, []float64{0, 0}}},
		{"completions", pgdriver.EndCompletesSQL, []any{ids, fences, []*string{nil, nil}}},
		{"heartbeats", pgdriver.HeartbeatJobsSQL, []any{ids, fences, int64(1000)}},
		{"current attempts", pgdriver.JobCurrentSQL, []any{ids, fences}},
	} {
		plan := explain(t, pool, "COSTS OFF", "plan_cache_mode = force_generic_plan", s.sql, s.args...)
		text := strings.Join(plan, "\n")
		if strings.Contains(text, "fenced_jobs_running") || !strings.Contains(text, "fenced_jobs_pkey") {
			t.Errorf("%s read through another index than the primary key:\n%s", s.name, text)
		}
	}
}
