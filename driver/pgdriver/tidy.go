package pgdriver

import (
	"context"
	"fmt"

	"github.com/fenced/fenced/driver"
)

var _ driver.JobTidier = (*Driver)(nil)

// tidyJobsSQL reads, from PostgreSQL's statistics (as autovacuum does), the
// job table's dead row versions and its rows changed since it was last
// analyzed, whether this role may vacuum and analyze the table (owner or
// superuser; VACUUM otherwise only warns and skips it), and the horizon
// below which a vacuum may remove rows: the oldest snapshot's xmin of any
// session of this database (its own included) or walsender, replication
// slot or prepared transaction.
const tidyJobsSQL = `
SELECT coalesce(s.n_dead_tup, 0), coalesce(s.n_mod_since_analyze, 0), coalesce(s.n_live_tup, 0),
       pg_has_role(current_user, c.relowner, 'USAGE'),
       COALESCE((SELECT h.x::text FROM (
           SELECT backend_xmin AS x FROM pg_stat_activity
           WHERE backend_xmin IS NOT NULL AND (datname IS NULL OR datname = current_database())
           UNION ALL SELECT xmin FROM pg_replication_slots
           WHERE xmin IS NOT NULL AND (database IS NULL OR database = current_database())
           UNION ALL SELECT transaction FROM pg_prepared_xacts WHERE database = current_database()) h
       ORDER BY age(h.x) DESC LIMIT 1), '')
FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
WHERE c.oid = 'fenced_jobs'::regclass`

// TidyJobs implements driver.JobTidier. With threshold dead row versions or more
// it vacuums fenced_jobs; with threshold rows changed since the last analyze,
// plus a tenth of its live rows, it analyzes it (both in one VACUUM
// (ANALYZE) when both are due). Neither takes a lock that claims,
// heartbeats or ends wait for. While the horizon a vacuum may remove rows
// below is where it was at this driver's last vacuum (a snapshot pinned by a
// long transaction, a replica's feedback, a slot), it does not vacuum
// again: that vacuum would read the whole table and remove nothing.
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
	var horizon string
	if err := d.pool.QueryRow(ctx, tidyJobsSQL).Scan(&dead, &changed, &live, &may, &horizon); err != nil {
		return false, fmt.Errorf("read fenced_jobs statistics: %w", err)
	}
	analyze := changed >= threshold+live/10
	d.vacuumed.Lock()
	pinned := horizon != "" && horizon == d.vacuumed.horizon
	d.vacuumed.Unlock()
	if pinned {
		// Every row that died since the last vacuum died after the horizon
		// it had, which has not moved: another vacuum would remove nothing.
		dead = 0
	}
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
	if stmt != `ANALYZE fenced_jobs` {
		d.vacuumed.Lock()
		d.vacuumed.horizon = horizon
		d.vacuumed.Unlock()
	}
	return true, nil
}
