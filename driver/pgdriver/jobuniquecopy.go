package pgdriver

import (
	"context"
	"errors"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// heldUniqueSQL lists which of the keys $1 (bucket 0) a job holds.
var heldUniqueSQL = `SELECT e.unique_key FROM fenced_jobs e
WHERE e.unique_key = ANY($1::bytea[]) AND e.unique_bucket = 0 AND ` + fmt.Sprintf(uniqueHeld, "e")

// uniqueCopyColumns are bulkColumns and the unique columns.
var uniqueCopyColumns = append(append([]string(nil), bulkColumns...), "unique_key", "unique_bucket", "unique_states")

// copyUnique is EnqueueBulk of a standalone batch of unique jobs without
// periods or idempotency keys that all run now, whose repeats within the
// batch flatUnique dropped: one read lists the keys already held, and the
// rest are copied in (COPY), as a batch of plain jobs is. The unique index
// stays the guarantee: a job a concurrent enqueuer inserted since the read
// makes the copy fail as a whole (nothing is written; the ids it drew are
// a gap), as does a deadlock with a concurrent batch, and ok is false: the caller then inserts the batch as
// enqueueUniqueBulkSQL does. It returns the jobs inserted.
func (d *Driver) copyUnique(ctx context.Context, jobs []driver.EnqueueParams) (n int, ok bool, err error) {
	keys := make([][]byte, 0, len(jobs))
	for i := range jobs {
		if jobs[i].UniqueKey != nil {
			keys = append(keys, jobs[i].UniqueKey)
		}
	}
	rows, err := d.pool.Query(ctx, heldUniqueSQL, keys)
	if err != nil {
		return 0, false, fmt.Errorf("enqueue: %w", notMigrated(err))
	}
	held, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return 0, false, fmt.Errorf("enqueue: %w", notMigrated(err))
	}
	if len(held) > 0 {
		taken := make(map[string]bool, len(held))
		for _, k := range held {
			taken[string(k)] = true
		}
		free := make([]driver.EnqueueParams, 0, len(jobs)-len(held))
		for _, j := range jobs {
			if j.UniqueKey == nil || !taken[string(j.UniqueKey)] {
				free = append(free, j)
			}
		}
		jobs = free
	}
	if len(jobs) == 0 {
		return 0, true, nil
	}
	copied, err := d.pool.CopyFrom(ctx, pgx.Identifier{"fenced_jobs"}, uniqueCopyColumns, &uniqueCopyRows{bulkRows: bulkRows{jobs: jobs, i: -1}})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "23505" && pe.ConstraintName == "fenced_jobs_unique" || pe.Code == "40P01") {
		// A key taken since the read, or a deadlock with a batch taking
		// the same keys in another order: nothing was written.
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("enqueue: %w", notMigrated(err))
	}
	return int(copied), true, nil
}

// uniqueCopyRows are bulkRows with the unique columns: the key, bucket 0
// and the states, or NULLs for a job that is not unique.
type uniqueCopyRows struct {
	bulkRows
	row [14]any
}

func (r *uniqueCopyRows) Values() ([]any, error) {
	v, _ := r.bulkRows.Values()
	copy(r.row[:], v)
	j := &r.jobs[r.i]
	r.row[11], r.row[12], r.row[13] = nil, nil, nil
	if j.UniqueKey != nil {
		r.row[11], r.row[12], r.row[13] = j.UniqueKey, int64(0), int32(j.UniqueStates)
	}
	return r.row[:], nil
}
