package mysqldriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// queueNotPausedMySQL is the pause check of every claim's pick: a probe of
// fenced_queue_pauses by its primary key (parameter: the queue). It names
// no column of the row being picked, so it is evaluated once per statement.
// A subquery of a locking read reads without locking, from the snapshot of
// the statement (the first of its transaction), which sees every pause that
// committed before the claim began.
const queueNotPausedMySQL = `NOT EXISTS (SELECT 1 FROM fenced_queue_pauses p FORCE INDEX (PRIMARY) WHERE p.queue = ?)`

// pauseQueueSQL stores a pause unless there is one: an existing row is
// left as it is, and the statement affects no row (the queue name is
// validated before, so the only error IGNORE turns into a warning is the
// duplicate key).
const pauseQueueSQL = `INSERT IGNORE INTO fenced_queue_pauses (queue, paused_at) VALUES (?, ` + now + `)`

// queuePausesSQL lists the pauses, of one queue when one is given.
const queuePausesSQL = `SELECT queue, paused_at FROM fenced_queue_pauses WHERE ? = '' OR queue = ? ORDER BY queue`

func scanQueuePause(r sqldb.Scanner) (fencedtype.QueuePause, error) {
	var p fencedtype.QueuePause
	err := r.Scan(&p.Queue, &p.PausedAt)
	p.PausedAt = p.PausedAt.UTC()
	return p, err
}

// PauseQueue implements driver.JobDriver: the insert and its read back in
// one transaction.
func (d *Driver) PauseQueue(ctx context.Context, queue string) (*fencedtype.QueuePause, bool, error) {
	var p fencedtype.QueuePause
	var n int64
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, pauseQueueSQL, queue)
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err != nil {
			return err
		}
		p, err = sqldb.One(ctx, tx, scanQueuePause, queuePausesSQL, queue, queue)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("pause queue %q: %w", queue, err)
	}
	return &p, n > 0, nil
}

// ResumeQueue implements driver.JobDriver. MySQL does not notify: workers
// of other Clients find the jobs at their next poll.
func (d *Driver) ResumeQueue(ctx context.Context, queue string) (bool, error) {
	res, err := d.db.ExecContext(ctx, `DELETE FROM fenced_queue_pauses WHERE queue = ?`, queue)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err != nil {
		return false, fmt.Errorf("resume queue %q: %w", queue, notMigrated(err))
	}
	return n > 0, nil
}

// ListQueuePauses implements driver.JobDriver.
func (d *Driver) ListQueuePauses(ctx context.Context) ([]fencedtype.QueuePause, error) {
	out, err := sqldb.All(ctx, d.db, scanQueuePause, queuePausesSQL, "", "")
	if err != nil {
		return nil, fmt.Errorf("list queue pauses: %w", notMigrated(err))
	}
	return out, nil
}
