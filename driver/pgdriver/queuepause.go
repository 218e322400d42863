package pgdriver

import (
	"context"
	"fmt"

	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
)

// queueNotPausedPG is the pause check of every claim's pick: a probe of
// fenced_queue_pauses by its primary key. It names no column of the row
// being picked, so the planner runs it once per statement (an InitPlan,
// tested by a one-time filter) rather than once per row.
const queueNotPausedPG = `NOT EXISTS (SELECT 1 FROM fenced_queue_pauses WHERE queue = $1)`

// pauseQueueSQL stores a pause unless there is one, and returns the stored
// one either way: the upsert's no-op update returns the existing row, also
// when a concurrent pause inserted it after this statement's snapshot.
// A row the statement inserted has no xmax; one it updated carries its
// own transaction id as xmax (the upsert's row lock).
const pauseQueueSQL = `
INSERT INTO fenced_queue_pauses AS p (queue, paused_at) VALUES ($1, clock_timestamp())
ON CONFLICT (queue) DO UPDATE SET paused_at = p.paused_at
RETURNING p.queue, p.paused_at, p.xmax = 0`

// PauseQueue implements driver.JobDriver.
func (d *Driver) PauseQueue(ctx context.Context, queue string) (*fencedtype.QueuePause, bool, error) {
	var p fencedtype.QueuePause
	var stored bool
	if err := d.pool.QueryRow(ctx, pauseQueueSQL, queue).Scan(&p.Queue, &p.PausedAt, &stored); err != nil {
		return nil, false, fmt.Errorf("pause queue %q: %w", queue, err)
	}
	return &p, stored, nil
}

// resumeQueueSQL deletes the pause and, when there was one, notifies the
// queue's listeners as an enqueue does (delivered when it commits).
const resumeQueueSQL = `
WITH resumed AS (DELETE FROM fenced_queue_pauses WHERE queue = $1 RETURNING queue),
notified AS (SELECT pg_notify('fenced_jobs', queue) FROM resumed)
SELECT count(*) FROM notified`

// ResumeQueue implements driver.JobDriver.
func (d *Driver) ResumeQueue(ctx context.Context, queue string) (bool, error) {
	var n int
	if err := d.pool.QueryRow(ctx, resumeQueueSQL, queue).Scan(&n); err != nil {
		return false, fmt.Errorf("resume queue %q: %w", queue, err)
	}
	return n > 0, nil
}

// ListQueuePauses implements driver.JobDriver.
func (d *Driver) ListQueuePauses(ctx context.Context) ([]fencedtype.QueuePause, error) {
	rows, err := d.pool.Query(ctx, `SELECT queue, paused_at FROM fenced_queue_pauses ORDER BY queue`)
	out, err := collectRows(rows, err, func(r pgx.CollectableRow) (fencedtype.QueuePause, error) {
		var p fencedtype.QueuePause
		return p, r.Scan(&p.Queue, &p.PausedAt)
	})
	if err != nil {
		return nil, fmt.Errorf("list queue pauses: %w", err)
	}
	return out, nil
}
