package sqlitedriver

import (
	"context"
	"fmt"
	"github.com/fenced/fenced/driver/internal/reads"

	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// listKeySlotsSQL reads the load of the concurrency keys of queue ?1 (every
// queue when empty): the keyed running jobs and the keyed due queued ones,
// grouped by queue and key, with the limit of keyLimitSQL. No
// index holds the keys of queued jobs: the queued rows are read and the
// keyed ones kept.
const listKeySlotsSQL = `
SELECT j.queue, j.concurrency_key, ` + keyLimitSQL + `, j.running, j.waiting FROM (
    SELECT queue, concurrency_key, CASE WHEN min(kind) = max(kind) THEN min(kind) ELSE '' END AS kind,
        sum(CASE WHEN state = 'running' THEN 1 ELSE 0 END) AS running,
        sum(CASE WHEN state = 'queued' THEN 1 ELSE 0 END) AS waiting
    FROM fenced_jobs
    WHERE concurrency_key IS NOT NULL AND (?1 = '' OR queue = ?1)
        AND (state = 'running' OR (state = 'queued' AND run_at_us <= ` + nowUS + `))
    GROUP BY queue, concurrency_key
) j
ORDER BY j.queue, j.concurrency_key`

// ListKeySlots implements driver.JobDriver.
func (d *Driver) ListKeySlots(ctx context.Context, queue string) ([]fencedtype.KeySlots, error) {
	out, err := sqldb.All(ctx, d.db, func(r sqldb.Scanner) (fencedtype.KeySlots, error) {
		return reads.ScanKeySlots(r)
	}, listKeySlotsSQL, queue)
	if err != nil {
		return nil, fmt.Errorf("list key slots: %w", notMigrated(err))
	}
	return out, nil
}
