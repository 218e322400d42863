package pgdriver

import (
	"context"
	"fmt"

	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
)

// setJobLimitSQL stores a limit, replacing the one of its scope.
const setJobLimitSQL = `
INSERT INTO fenced_job_limits AS l (queue, kind, concurrency_key, per_key_limit, global_limit, updated_at)
VALUES ($1, $2, $3, $4, $5, clock_timestamp())
ON CONFLICT (queue, kind, concurrency_key) DO UPDATE SET
    per_key_limit = EXCLUDED.per_key_limit, global_limit = EXCLUDED.global_limit, updated_at = EXCLUDED.updated_at
RETURNING l.queue, l.kind, l.concurrency_key, l.per_key_limit, l.global_limit`

// SetJobLimit implements driver.JobDriver.
func (d *Driver) SetJobLimit(ctx context.Context, l fencedtype.JobLimit) (*fencedtype.JobLimit, error) {
	var out fencedtype.JobLimit
	err := d.pool.QueryRow(ctx, setJobLimitSQL, l.Queue, l.Kind, l.ConcurrencyKey, l.PerKey, l.Global).
		Scan(&out.Queue, &out.Kind, &out.ConcurrencyKey, &out.PerKey, &out.Global)
	if err != nil {
		return nil, fmt.Errorf("set job limit: %w", err)
	}
	return &out, nil
}

// deleteJobLimitSQL deletes the limit of one scope.
const deleteJobLimitSQL = `DELETE FROM fenced_job_limits WHERE queue = $1 AND kind = $2 AND concurrency_key = $3`

// DeleteJobLimit implements driver.JobDriver.
func (d *Driver) DeleteJobLimit(ctx context.Context, queue, kind, key string) error {
	tag, err := d.pool.Exec(ctx, deleteJobLimitSQL, queue, kind, key)
	if err != nil {
		return fmt.Errorf("delete job limit: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fencedtype.ErrNotFound
	}
	return nil
}

// listJobLimitsSQL lists the limits of queue $1, every queue when empty.
const listJobLimitsSQL = `
SELECT queue, kind, concurrency_key, per_key_limit, global_limit FROM fenced_job_limits
WHERE $1 = '' OR queue = $1
ORDER BY queue, kind, concurrency_key`

// ListJobLimits implements driver.JobDriver.
func (d *Driver) ListJobLimits(ctx context.Context, queue string) ([]fencedtype.JobLimit, error) {
	rows, err := d.pool.Query(ctx, listJobLimitsSQL, queue)
	out, err := collectRows(rows, err, func(r pgx.CollectableRow) (fencedtype.JobLimit, error) {
		var l fencedtype.JobLimit
		return l, r.Scan(&l.Queue, &l.Kind, &l.ConcurrencyKey, &l.PerKey, &l.Global)
	})
	if err != nil {
		return nil, fmt.Errorf("list job limits: %w", err)
	}
	return out, nil
}
