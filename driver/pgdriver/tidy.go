package pgdriver

import (
	"context"
	"fmt"

	"github.com/fenced/fenced/driver"
)

var _ driver.JobTidier = (*Driver)(nil)

// tidyJobsSQL reads, from PostgreSQL's statistics (as autovacuum does), the
// job table's dead row versions and its rows changed since it was last
// analyzed, and whether this role may vacuum and analyze the table (owner or
// superuser; VACUUM otherwise only warns and skips it).
const tidyJobsSQL = `
SELECT coalesce(s.n_dead_tup, 0), coalesce(s.n_mod_since_analyze, 0), coalesce(s.n_live_tup, 0),
       pg_has_role(current_user, c.relowner, 'USAGE')
FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE c.oid = 'fenced_jobs'::regclass`

// TidyJobs implements driver.JobTidier. With threshold dead row versions or more
// it vacuums fenced_jobs; with threshold rows changed since the last analyze,
// plus a tenth of its live rows, it analyzes it (both in one VACUUM
// (ANALYZE) when both are due). Neither takes a lock that claims,
// heartbeats or ends wait for.
//
// Fresh statistics matter as much as the vacuum: a claim planned with
// statistics taken while the queue was nearly empty estimates a handful of
// queued jobs, and then sorts every queued job instead of reading the first
// ones from the claim index. The tenth of the live rows (as autovacuum's
// analyze scale factor) spaces the analyses of a table holding millions of
// finished jobs, whose statistics a few seconds of work barely move: each
// samples the whole table and holds back what page pruning may remove while
// it runs (docs/design.md §10, measurements).
func (d *Driver) TidyJobs(ctx context.Context, threshold int64) (bool, error) {
	var dead, changed, live int64
	var may bool
	if err := d.pool.QueryRow(ctx, tidyJobsSQL).Scan(&dead, &changed, &live, &may); err != nil {
		return false, fmt.Errorf("read fenced_jobs statistics: %w", err)
	}
	analyze := changed >= threshold+live/10
	var stmt string
	switch {
	case !may:
		return false, nil
	case dead >= threshold && analyze:
		stmt = `VACUUM (ANALYZE) fenced_jobs`
	case dead >= threshold:
		stmt = `VACUUM fenced_jobs`
	case analyze:
		stmt = `ANALYZE fenced_jobs`
	default:
		return false, nil
	}
	if _, err := d.pool.Exec(ctx, stmt); err != nil {
		return false, fmt.Errorf("%s: %w", stmt, err)
	}
	return true, nil
}
