package mysqldriver

import (
	"context"
	"fmt"
	"github.com/fenced/fenced/driver/internal/reads"

	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// listKeySlotsSQL reads the load of the concurrency keys of a queue (every
// queue when empty): the keyed running jobs and the keyed due queued ones,
// grouped by queue and key, with the limit of keyLimitSQL. The
// rows are found by state (the state index) and the keyed ones kept: no
// index holds the keys of queued jobs, and the virtual key column of
// running jobs is indexed behind the queue, which this read may not name.
const listKeySlotsSQL = `
SELECT j.queue, j.concurrency_key, ` + keyLimitSQL + `, j.running, j.waiting FROM (
    SELECT queue, concurrency_key, CASE WHEN MIN(kind) = MAX(kind) THEN MIN(kind) ELSE '' END AS kind,
        SUM(CASE WHEN state = 'running' THEN 1 ELSE 0 END) AS running,
        SUM(CASE WHEN state = 'queued' THEN 1 ELSE 0 END) AS waiting
    FROM fenced_jobs
    WHERE concurrency_key IS NOT NULL AND (? = '' OR queue = ?)
        AND (state = 'running' OR (state = 'queued' AND run_at <= ` + now + `))
    GROUP BY queue, concurrency_key
) j
ORDER BY j.queue, j.concurrency_key`

// ListKeySlots implements driver.JobDriver.
func (d *Driver) ListKeySlots(ctx context.Context, queue string) ([]fencedtype.KeySlots, error) {
	out, err := sqldb.All(ctx, d.db, func(r sqldb.Scanner) (fencedtype.KeySlots, error) {
		return reads.ScanKeySlots(r)
	}, listKeySlotsSQL, queue, queue)
	if err != nil {
		return nil, fmt.Errorf("list key slots: %w", notMigrated(err))
	}
	return out, nil
}
