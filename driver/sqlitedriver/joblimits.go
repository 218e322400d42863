package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// setJobLimitSQL stores a limit, replacing the one of its scope.
const setJobLimitSQL = `
INSERT INTO fenced_job_limits (queue, kind, concurrency_key, per_key_limit, global_limit, updated_us)
VALUES (?1, ?2, ?3, ?4, ?5, ` + nowUS + `)
ON CONFLICT (queue, kind, concurrency_key) DO UPDATE SET
    per_key_limit = excluded.per_key_limit, global_limit = excluded.global_limit, updated_us = excluded.updated_us
RETURNING queue, kind, concurrency_key, per_key_limit, global_limit`

func scanJobLimit(r sqldb.Scanner) (fencedtype.JobLimit, error) {
	var l fencedtype.JobLimit
	return l, r.Scan(&l.Queue, &l.Kind, &l.ConcurrencyKey, &l.PerKey, &l.Global)
}

// SetJobLimit implements driver.JobDriver.
func (d *Driver) SetJobLimit(ctx context.Context, l fencedtype.JobLimit) (*fencedtype.JobLimit, error) {
	var out fencedtype.JobLimit
	err := d.writeTx(ctx, func(tx *sql.Tx) (err error) {
		out, err = sqldb.One(ctx, tx, scanJobLimit, setJobLimitSQL, l.Queue, l.Kind, l.ConcurrencyKey, l.PerKey, l.Global)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("set job limit: %w", err)
	}
	return &out, nil
}

// deleteJobLimitSQL deletes the limit of one scope.
const deleteJobLimitSQL = `DELETE FROM fenced_job_limits WHERE queue = ?1 AND kind = ?2 AND concurrency_key = ?3`

// DeleteJobLimit implements driver.JobDriver.
func (d *Driver) DeleteJobLimit(ctx context.Context, queue, kind, key string) error {
	var n int64
	err := d.writeTx(ctx, func(tx *sql.Tx) (err error) {
		n, err = sqldb.Exec(ctx, tx, deleteJobLimitSQL, queue, kind, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete job limit: %w", err)
	}
	if n == 0 {
		return fencedtype.ErrNotFound
	}
	return nil
}

// listJobLimitsSQL lists the limits of queue ?1, every queue when empty.
const listJobLimitsSQL = `
SELECT queue, kind, concurrency_key, per_key_limit, global_limit FROM fenced_job_limits
WHERE ?1 = '' OR queue = ?1
ORDER BY queue, kind, concurrency_key`

// ListJobLimits implements driver.JobDriver.
func (d *Driver) ListJobLimits(ctx context.Context, queue string) ([]fencedtype.JobLimit, error) {
	out, err := sqldb.All(ctx, d.db, scanJobLimit, listJobLimitsSQL, queue)
	if err != nil {
		return nil, fmt.Errorf("list job limits: %w", notMigrated(err))
	}
	return out, nil
}
