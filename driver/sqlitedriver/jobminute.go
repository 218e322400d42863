package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/fenced/fenced/driver/internal/rollup"
	"time"

	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// minuteQueries are RollupJobMinute's statements; times are microseconds.
var minuteQueries = sqldb.MinuteQueries{
	Mark: `INSERT INTO fenced_job_minutes (minute_us, queue, succeeded, failed, cancelled, retried, lost, depth, waits)
VALUES (?, '', 0, 0, 0, 0, 0, -1, '') ON CONFLICT DO NOTHING`,
	Finished: `SELECT queue, state, CASE WHEN attempted_us IS NULL OR state = 'cancelled' THEN -1
    ELSE ` + rollup.WaitBucketSQL(`(attempted_us - run_at_us) / 1000.0`) + ` END AS bucket, count(*)
FROM fenced_jobs WHERE finished_us >= ? AND finished_us < ? GROUP BY 1, 2, 3`,
	Requeued: `SELECT j.queue, a.outcome, count(*) FROM fenced_job_attempts a JOIN fenced_jobs j ON j.id = a.job_id
WHERE a.outcome IN ('retry', 'lost') AND a.ended_us >= ? AND a.ended_us < ? GROUP BY 1, 2`,
	Depth: `SELECT queue, count(*) FROM fenced_jobs WHERE state = 'queued' GROUP BY queue`,
	Insert: `INSERT INTO fenced_job_minutes (minute_us, queue, succeeded, failed, cancelled, retried, lost, depth, waits)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	MarkDepth: `UPDATE fenced_job_minutes SET depth = ? WHERE minute_us = ? AND queue = ''`,
	Prune:     `DELETE FROM fenced_job_minutes WHERE minute_us < ?`,
}

func timeUS(t time.Time) any { return t.UnixMicro() }

// RollupJobMinute implements driver.JobDriver, in one write transaction.
func (d *Driver) RollupJobMinute(ctx context.Context, minute time.Time, depth bool, keepSince time.Time) (bool, error) {
	var done bool
	err := d.writeTx(ctx, func(tx *sql.Tx) (err error) {
		done, err = minuteQueries.RollupMinute(ctx, tx, timeUS, minute, depth, keepSince)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("roll up the minute of %s: %w", minute.Format(time.RFC3339), err)
	}
	return done, nil
}

// ListJobMinutes implements driver.JobDriver.
func (d *Driver) ListJobMinutes(ctx context.Context, since time.Time) ([]fencedtype.JobMinute, error) {
	out, err := sqldb.All(ctx, d.db, sqldb.ScanJobMinute(usTime),
		`SELECT minute_us, queue, succeeded, failed, cancelled, retried, lost, depth, waits
FROM fenced_job_minutes WHERE minute_us >= ? ORDER BY minute_us, queue`, since.UnixMicro())
	if err != nil {
		return nil, fmt.Errorf("list job minutes: %w", notMigrated(err))
	}
	return out, nil
}
