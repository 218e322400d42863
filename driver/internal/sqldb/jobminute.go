package sqldb

import (
	"context"
	"database/sql"
	"github.com/fenced/fenced/driver/internal/rollup"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

// MinuteQueries are a backend's statements of RollupJobMinute, each
// taking its parameters once, in order, as plain ? placeholders.
type MinuteQueries struct {
	// Mark inserts the minute's marker row unless it is there (minute).
	Mark string
	// Finished reads queue, state, wait bucket (-1: none) and count of the
	// jobs that finished in the minute (start, end).
	Finished string
	// Requeued reads queue, outcome and count of the retried and lost
	// attempts that ended in the minute (start, end).
	Requeued string
	// Depth reads queue and count of the queued jobs.
	Depth string
	// Insert stores one row (minute, queue, succeeded, failed, cancelled,
	// retried, lost, depth, waits).
	Insert string
	// MarkDepth sets the marker's depth (depth, minute).
	MarkDepth string
	// Prune deletes the rows of minutes before its parameter.
	Prune string
}

// RollupMinute does RollupJobMinute in tx: t converts a time into the
// backend's column value.
func (q MinuteQueries) RollupMinute(ctx context.Context, tx *sql.Tx, t func(time.Time) any,
	minute time.Time, depth bool, keepSince time.Time) (bool, error) {
	n, err := Exec(ctx, tx, q.Mark, t(minute))
	if err != nil || n == 0 {
		return false, err
	}
	r := rollup.NewMinute(minute, depth)
	start, end := t(minute), t(minute.Add(time.Minute))
	if err := each(ctx, tx, q.Finished, []any{start, end}, r.ScanFinished); err != nil {
		return false, err
	}
	if err := each(ctx, tx, q.Requeued, []any{start, end}, r.ScanAttempts); err != nil {
		return false, err
	}
	if depth {
		if err := each(ctx, tx, q.Depth, nil, r.ScanDepth); err != nil {
			return false, err
		}
	}
	rows := r.Rows()
	if depth {
		if _, err := tx.ExecContext(ctx, q.MarkDepth, rows[0].Depth, start); err != nil {
			return false, err
		}
	}
	for _, m := range rows[1:] { // the marker is in
		if _, err := tx.ExecContext(ctx, q.Insert, start, m.Queue, m.Succeeded, m.Failed, m.Cancelled,
			m.Retried, m.Lost, m.Depth, rollup.FormatWaits(m.Waits)); err != nil {
			return false, err
		}
	}
	if _, err := tx.ExecContext(ctx, q.Prune, t(keepSince)); err != nil {
		return false, err
	}
	return true, nil
}

// ScanJobMinute scans a row of minute (as the backend stores it, read
// into *T), queue, succeeded, failed, cancelled, retried, lost, depth and
// waits; at converts the minute.
func ScanJobMinute[T any](at func(T) time.Time) func(Scanner) (fencedtype.JobMinute, error) {
	return func(r Scanner) (fencedtype.JobMinute, error) {
		var m fencedtype.JobMinute
		var minute T
		var waits string
		if err := r.Scan(&minute, &m.Queue, &m.Succeeded, &m.Failed, &m.Cancelled, &m.Retried, &m.Lost, &m.Depth, &waits); err != nil {
			return m, err
		}
		m.Minute = at(minute)
		var err error
		m.Waits, err = rollup.ParseWaits(waits)
		return m, err
	}
}

// each runs query and calls fn on each row.
func each(ctx context.Context, q Querier, query string, args []any, fn func(Scanner) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
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
