package mysqldriver

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/fenced/fenced/driver/internal/rollup"
	"time"

	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// minuteQueries are RollupJobMinute's statements. The marker's INSERT
// IGNORE turns only the duplicate key into a warning: its values are
// constants that meet every check.
var minuteQueries = sqldb.MinuteQueries{
	Mark: `INSERT IGNORE INTO fenced_job_minutes (minute, queue, succeeded, failed, cancelled, retried, lost, depth, waits)
VALUES (?, '', 0, 0, 0, 0, 0, -1, '')`,
	Finished: `SELECT queue, state, CASE WHEN attempted_at IS NULL OR state = 'cancelled' THEN -1
    ELSE ` + rollup.WaitBucketSQL(`TIMESTAMPDIFF(MICROSECOND, run_at, attempted_at) / 1000`) + ` END AS bucket, count(*)
FROM fenced_jobs FORCE INDEX (fenced_jobs_finished) WHERE finished_at >= ? AND finished_at < ? GROUP BY 1, 2, 3`,
	Requeued: `SELECT j.queue, a.outcome, count(*) FROM fenced_job_attempts a JOIN fenced_jobs j ON j.id = a.job_id
WHERE a.outcome IN ('retry', 'lost') AND a.ended_at >= ? AND a.ended_at < ? GROUP BY 1, 2`,
	Depth: `SELECT queued_queue, count(*) FROM fenced_jobs WHERE queued_queue IS NOT NULL GROUP BY queued_queue`,
	Insert: `INSERT INTO fenced_job_minutes (minute, queue, succeeded, failed, cancelled, retried, lost, depth, waits)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	MarkDepth: `UPDATE fenced_job_minutes SET depth = ? WHERE minute = ? AND queue = ''`,
	Prune:     `DELETE FROM fenced_job_minutes WHERE minute < ?`,
}

func utc(t time.Time) any { return t.UTC() }

// RollupJobMinute implements driver.JobDriver, in one transaction.
func (d *Driver) RollupJobMinute(ctx context.Context, minute time.Time, depth bool, keepSince time.Time) (bool, error) {
	var done bool
	err := d.inTx(ctx, func(tx *sql.Tx) (err error) {
		done, err = minuteQueries.RollupMinute(ctx, tx, utc, minute, depth, keepSince)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("roll up the minute of %s: %w", minute.Format(time.RFC3339), err)
	}
	return done, nil
}

// ListJobMinutes implements driver.JobDriver.
func (d *Driver) ListJobMinutes(ctx context.Context, since time.Time) ([]fencedtype.JobMinute, error) {
	out, err := sqldb.All(ctx, d.db, sqldb.ScanJobMinute(func(t time.Time) time.Time { return t.UTC() }),
		`SELECT minute, queue, succeeded, failed, cancelled, retried, lost, depth, waits
FROM fenced_job_minutes WHERE minute >= ? ORDER BY minute, queue`, since.UTC())
	if err != nil {
		return nil, fmt.Errorf("list job minutes: %w", notMigrated(err))
	}
	return out, nil
}
