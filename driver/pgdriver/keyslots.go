package pgdriver

import (
	"context"
	"fmt"
	"github.com/fenced/fenced/driver/internal/reads"

	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
)

// listKeySlotsSQL reads the load of the concurrency keys of queue $1 (every
// queue when empty): the keyed running jobs and the keyed due queued ones,
// grouped by queue and key, with the limit of keyLimitSQL. The
// planner reads the running and the queued rows through the state indexes
// (a bitmap of both) and keeps the keyed ones: no index holds the keys of
// queued jobs.
const listKeySlotsSQL = `
SELECT j.queue, j.concurrency_key, ` + keyLimitSQL + `, j.running, j.waiting FROM (
    SELECT queue, concurrency_key, CASE WHEN min(kind) = max(kind) THEN min(kind) ELSE '' END AS kind,
        count(*) FILTER (WHERE state = 'running') AS running,
        count(*) FILTER (WHERE state = 'queued') AS waiting
    FROM fenced_jobs
    WHERE concurrency_key IS NOT NULL AND ($1 = '' OR queue = $1)
        AND (state = 'running' OR (state = 'queued' AND run_at <= clock_timestamp()))
    GROUP BY queue, concurrency_key
) j` + keyLimitJoinSQL + `
ORDER BY j.queue, j.concurrency_key`

// ListKeySlots implements driver.JobDriver.
func (d *Driver) ListKeySlots(ctx context.Context, queue string) ([]fencedtype.KeySlots, error) {
	rows, err := d.pool.Query(ctx, listKeySlotsSQL, queue)
	out, err := collectRows(rows, err, func(r pgx.CollectableRow) (fencedtype.KeySlots, error) {
		return reads.ScanKeySlots(r)
	})
	if err != nil {
		return nil, fmt.Errorf("list key slots: %w", err)
	}
	return out, nil
}
