package mysqldriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fenced/fenced/driver"
)

var _ driver.BulkEnqueuer = (*Driver)(nil)

// EnqueueBulk implements driver.BulkEnqueuer: the inserts of Enqueue, in one
// transaction or the caller's, without reading the jobs back. Runs of jobs
// without an idempotency key go in one multiple-row INSERT each, whatever
// innodb_autoinc_lock_mode (no id is needed); a job with a key goes alone
// and is not counted when its key exists, as a unique job is when its
// slot is held (the failed statement undoes only
// itself, so the transaction goes on).
func (d *Driver) EnqueueBulk(ctx context.Context, tx driver.Tx, jobs []driver.EnqueueParams) (int, error) {
	var n int
	var err error
	if tx != nil {
		var stx *sql.Tx
		if stx, err = sqlOf(tx); err != nil {
			return 0, err
		}
		n, err = insertBulk(ctx, stx, jobs)
	} else {
		err = d.inTx(ctx, func(tx *sql.Tx) (err error) {
			n, err = insertBulk(ctx, tx, jobs)
			return err
		})
	}
	if err != nil {
		return 0, fmt.Errorf("enqueue: %w", notMigrated(err))
	}
	return n, nil
}

// insertBulk inserts jobs in tx and returns how many it inserted.
func insertBulk(ctx context.Context, tx *sql.Tx, jobs []driver.EnqueueParams) (int, error) {
	n := 0
	for i := 0; i < len(jobs); {
		end := runEnd(jobs, i)
		query, args := insertSQL(jobs, i, end)
		res, err := tx.ExecContext(ctx, query, args...)
		switch {
		case err != nil && (jobs[i].IdempotencyKey != "" || jobs[i].UniqueKey != nil) && isDuplicate(err):
			// the key's job, or the unique slot's holder, exists: skipped
		case err != nil:
			return 0, err
		default:
			k, err := res.RowsAffected()
			if err != nil {
				return 0, err
			}
			n += int(k)
		}
		i = end
	}
	return n, nil
}
