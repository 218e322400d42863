package mysqldriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// setJobLimitSQL stores a limit, replacing the one of its scope.
const setJobLimitSQL = `
INSERT INTO fenced_job_limits (queue, kind, concurrency_key, per_key_limit, global_limit, updated_at)
VALUES (?, ?, ?, ?, ?, ` + now + `)
ON DUPLICATE KEY UPDATE per_key_limit = VALUES(per_key_limit), global_limit = VALUES(global_limit),
    updated_at = VALUES(updated_at)`

// SetJobLimit implements driver.JobDriver: the upsert and its read back in
// one transaction.
func (d *Driver) SetJobLimit(ctx context.Context, l fencedtype.JobLimit) (*fencedtype.JobLimit, error) {
	var out fencedtype.JobLimit
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, setJobLimitSQL, l.Queue, l.Kind, l.ConcurrencyKey, l.PerKey, l.Global); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT queue, kind, concurrency_key, per_key_limit, global_limit
FROM fenced_job_limits WHERE queue = ? AND kind = ? AND concurrency_key = ?`, l.Queue, l.Kind, l.ConcurrencyKey).
			Scan(&out.Queue, &out.Kind, &out.ConcurrencyKey, &out.PerKey, &out.Global)
	})
	if err != nil {
		return nil, fmt.Errorf("set job limit: %w", err)
	}
	return &out, nil
}

// deleteJobLimitSQL deletes the limit of one scope.
const deleteJobLimitSQL = `DELETE FROM fenced_job_limits WHERE queue = ? AND kind = ? AND concurrency_key = ?`

// DeleteJobLimit implements driver.JobDriver.
func (d *Driver) DeleteJobLimit(ctx context.Context, queue, kind, key string) error {
	n, err := execCount(ctx, d.db, deleteJobLimitSQL, queue, kind, key)
	if err != nil {
		return fmt.Errorf("delete job limit: %w", notMigrated(err))
	}
	if n == 0 {
		return fencedtype.ErrNotFound
	}
	return nil
}

// listJobLimitsSQL lists the limits of a queue, every queue when empty.
const listJobLimitsSQL = `
SELECT queue, kind, concurrency_key, per_key_limit, global_limit FROM fenced_job_limits
WHERE ? = '' OR queue = ?
ORDER BY queue, kind, concurrency_key`

// ListJobLimits implements driver.JobDriver.
func (d *Driver) ListJobLimits(ctx context.Context, queue string) ([]fencedtype.JobLimit, error) {
	out, err := sqldb.All(ctx, d.db, func(r sqldb.Scanner) (fencedtype.JobLimit, error) {
		var l fencedtype.JobLimit
		return l, r.Scan(&l.Queue, &l.Kind, &l.ConcurrencyKey, &l.PerKey, &l.Global)
	}, listJobLimitsSQL, queue, queue)
	if err != nil {
		return nil, fmt.Errorf("list job limits: %w", notMigrated(err))
	}
	return out, nil
}
