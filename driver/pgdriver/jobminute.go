package pgdriver

import (
	"context"
	"fmt"
	"github.com/fenced/fenced/driver/internal/rollup"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
)

// Statements of RollupJobMinute; $1 and $2 are the minute's start and end.
var (
	minuteMarkSQL = `INSERT INTO fenced_job_minutes (minute, queue, succeeded, failed, cancelled, retried, lost, depth, waits)
VALUES ($1, '', 0, 0, 0, 0, 0, -1, '') ON CONFLICT DO NOTHING`
	// minuteFinishedSQL reads the jobs that finished in the minute (by
	// fenced_jobs_finished), with the claim wait of those that ran.
	minuteFinishedSQL = `
SELECT queue, state, CASE WHEN attempted_at IS NULL OR state = 'cancelled' THEN -1
    ELSE ` + rollup.WaitBucketSQL(`extract(epoch FROM attempted_at - run_at) * 1000`) + ` END AS bucket, count(*)
FROM fenced_jobs WHERE finished_at >= $1 AND finished_at < $2
GROUP BY 1, 2, 3`
	// minuteRequeuedSQL reads the retried and lost attempts that ended in
	// the minute (by fenced_job_attempts_requeued).
	minuteRequeuedSQL = `
SELECT j.queue, a.outcome, count(*) FROM fenced_job_attempts a JOIN fenced_jobs j ON j.id = a.job_id
WHERE a.outcome IN ('retry', 'lost') AND a.ended_at >= $1 AND a.ended_at < $2
GROUP BY 1, 2`
	// minuteDepthSQL counts each queue's queued jobs: those a claim may
	// read (fenced_jobs_claim), and those held behind their sequences
	// (fenced_jobs_sequence), which no claim index holds.
	minuteDepthSQL = `SELECT queue, sum(n)::bigint FROM (
    SELECT queue, count(*) AS n FROM fenced_jobs WHERE state = 'queued' AND NOT held GROUP BY queue
    UNION ALL
    SELECT queue, count(*) FROM fenced_jobs WHERE state = 'queued' AND held AND sequence_key IS NOT NULL GROUP BY queue
) c GROUP BY queue`
	minuteInsertSQL = `INSERT INTO fenced_job_minutes (minute, queue, succeeded, failed, cancelled, retried, lost, depth, waits)
SELECT $1, * FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], $9::text[])`
	minutePruneSQL     = `DELETE FROM fenced_job_minutes WHERE minute < $1`
	minuteMarkDepthSQL = `UPDATE fenced_job_minutes SET depth = $2 WHERE minute = $1 AND queue = ''`
)

// rollupSlice is the span of one read of a minute's finished jobs. A read
// holds back what VACUUM and page pruning may remove while it runs, and
// meanwhile the dead index entries at the head of a busy queue pile up and
// every claim walks them; a read of a slice of the minute holds it back
// for that slice's share of the time (docs/design.md §10, measurements).
const rollupSlice = 10 * time.Second

// RollupJobMinute implements driver.JobDriver. The minute is read first, by
// statements of their own (no transaction: none holds back vacuum for
// longer than its own read), then written in one short transaction that
// inserts the marker first: a caller that finds the marker there already
// writes nothing, so racing callers roll the minute up once.
func (d *Driver) RollupJobMinute(ctx context.Context, minute time.Time, depth bool, keepSince time.Time) (bool, error) {
	fail := func(err error) (bool, error) {
		return false, fmt.Errorf("roll up the minute of %s: %w", minute.Format(time.RFC3339), err)
	}
	r := rollup.NewMinute(minute, depth)
	end := minute.Add(time.Minute)
	for from := minute; from.Before(end); from = from.Add(rollupSlice) {
		to := from.Add(rollupSlice)
		if to.After(end) {
			to = end
		}
		if err := forRows(ctx, d.pool, minuteFinishedSQL, []any{from, to}, r.ScanFinished); err != nil {
			return fail(err)
		}
	}
	if err := forRows(ctx, d.pool, minuteRequeuedSQL, []any{minute, end}, r.ScanAttempts); err != nil {
		return fail(err)
	}
	if depth {
		if err := forRows(ctx, d.pool, minuteDepthSQL, nil, r.ScanDepth); err != nil {
			return fail(err)
		}
	}
	rows := r.Rows()
	var cols struct {
		queue, waits                                     []string
		succeeded, failed, cancelled, retried, lost, dep []int64
	}
	for _, m := range rows[1:] { // rows[0] is the marker
		cols.queue = append(cols.queue, m.Queue)
		cols.succeeded = append(cols.succeeded, m.Succeeded)
		cols.failed = append(cols.failed, m.Failed)
		cols.cancelled = append(cols.cancelled, m.Cancelled)
		cols.retried = append(cols.retried, m.Retried)
		cols.lost = append(cols.lost, m.Lost)
		cols.dep = append(cols.dep, m.Depth)
		cols.waits = append(cols.waits, rollup.FormatWaits(m.Waits))
	}
	done := false
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, minuteMarkSQL, minute)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		if depth {
			if _, err := tx.Exec(ctx, minuteMarkDepthSQL, minute, rows[0].Depth); err != nil {
				return err
			}
		}
		if len(cols.queue) > 0 {
			if _, err := tx.Exec(ctx, minuteInsertSQL, minute, cols.queue, cols.succeeded, cols.failed,
				cols.cancelled, cols.retried, cols.lost, cols.dep, cols.waits); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, minutePruneSQL, keepSince); err != nil {
			return err
		}
		done = true
		return nil
	})
	if err != nil {
		return fail(notMigrated(err))
	}
	return done, nil
}

// forRows runs sql through q and calls fn for each row.
func forRows(ctx context.Context, q querier, sql string, args []any, fn func(driver.Row) error) error {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// ListJobMinutes implements driver.JobDriver.
func (d *Driver) ListJobMinutes(ctx context.Context, since time.Time) ([]fencedtype.JobMinute, error) {
	rows, err := d.pool.Query(ctx, `SELECT minute, queue, succeeded, failed, cancelled, retried, lost, depth, waits
FROM fenced_job_minutes WHERE minute >= $1 ORDER BY minute, queue`, since)
	out, err := collectRows(rows, err, func(r pgx.CollectableRow) (fencedtype.JobMinute, error) {
		var m fencedtype.JobMinute
		var waits string
		if err := r.Scan(&m.Minute, &m.Queue, &m.Succeeded, &m.Failed, &m.Cancelled, &m.Retried, &m.Lost, &m.Depth, &waits); err != nil {
			return m, err
		}
		var err error
		m.Waits, err = rollup.ParseWaits(waits)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("list job minutes: %w", err)
	}
	return out, nil
}
