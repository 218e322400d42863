package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// queueNotPausedSQLite is the pause check of every claim's pick: a probe of
// fenced_queue_pauses by its primary key. It names no column of the row
// being picked, so SQLite evaluates it once per statement. A claim runs
// under the one write lock, so a pause that committed before it is seen.
const queueNotPausedSQLite = `NOT EXISTS (SELECT 1 FROM fenced_queue_pauses WHERE queue = ?1)`

// pauseQueueSQL stores a pause unless there is one; the write transaction
// then reads the pause as stored (queuePauseSQL).
const (
	pauseQueueSQL = `INSERT INTO fenced_queue_pauses (queue, paused_us) VALUES (?1, ` + nowUS + `)
ON CONFLICT (queue) DO NOTHING`
	queuePauseSQL = `SELECT queue, paused_us FROM fenced_queue_pauses WHERE queue = ?1`
)

func scanQueuePause(r sqldb.Scanner) (fencedtype.QueuePause, error) {
	var p fencedtype.QueuePause
	var us int64
	err := r.Scan(&p.Queue, &us)
	p.PausedAt = usTime(us)
	return p, err
}

// PauseQueue implements driver.JobDriver: the insert and its read back in
// one write transaction.
func (d *Driver) PauseQueue(ctx context.Context, queue string) (*fencedtype.QueuePause, bool, error) {
	var p fencedtype.QueuePause
	var n int64
	err := d.writeTx(ctx, func(tx *sql.Tx) (err error) {
		if n, err = sqldb.Exec(ctx, tx, pauseQueueSQL, queue); err != nil {
			return err
		}
		p, err = sqldb.One(ctx, tx, scanQueuePause, queuePauseSQL, queue)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("pause queue %q: %w", queue, err)
	}
	return &p, n > 0, nil
}

// ResumeQueue implements driver.JobDriver. SQLite does not notify:
// workers of other Clients find the jobs at their next poll.
func (d *Driver) ResumeQueue(ctx context.Context, queue string) (bool, error) {
	var n int64
	err := d.writeTx(ctx, func(tx *sql.Tx) (err error) {
		n, err = sqldb.Exec(ctx, tx, `DELETE FROM fenced_queue_pauses WHERE queue = ?1`, queue)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("resume queue %q: %w", queue, err)
	}
	return n > 0, nil
}

// ListQueuePauses implements driver.JobDriver.
func (d *Driver) ListQueuePauses(ctx context.Context) ([]fencedtype.QueuePause, error) {
	out, err := sqldb.All(ctx, d.db, scanQueuePause, `SELECT queue, paused_us FROM fenced_queue_pauses ORDER BY queue`)
	if err != nil {
		return nil, fmt.Errorf("list queue pauses: %w", notMigrated(err))
	}
	return out, nil
}
