package sqlitedriver

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/fenced/fenced/driver"
)

var _ driver.BulkEnqueuer = (*Driver)(nil)

// enqueueBulkSQL enqueues a batch in one statement, each job as enqueueSQL
// enqueues it but with one clock reading for the whole batch. ?1 is a JSON
// array with one element per job (bulkArgs): [kind, queue, args (the hex of
// its bytes, so they are stored as given), priority, run_at_us or null,
// delay_us, max_attempts, idempotency key, concurrency key and sequence key
// (empty for none), sequence_continue_on_failed, metadata (the hex of its
// bytes, or null for none), policy (likewise), tags (an array, or null for
// none)]. The jobs are inserted in
// the array's order, so their ids ascend in input order; a job whose
// idempotency key exists already (committed before, or earlier in the
// batch) is skipped, before the insert (NOT EXISTS, and the first of each
// key in the batch by row_number), so that it consumes no id as a row
// refused by ON CONFLICT does under AUTOINCREMENT (see enqueueSQL).
const enqueueBulkSQL = `
INSERT INTO fenced_jobs (kind, queue, args, priority, run_at_us, max_attempts, idempotency_key,
    concurrency_key, sequence_key, sequence_continue_on_failed, metadata, created_us, updated_us,
    policy, tags)
SELECT value ->> 0, value ->> 1, CAST(unhex(value ->> 2) AS TEXT), value ->> 3,
    COALESCE(value ->> 4, ` + nowUS + ` + (value ->> 5)), value ->> 6, NULLIF(value ->> 7, ''),
    NULLIF(value ->> 8, ''), NULLIF(value ->> 9, ''), value ->> 10, CAST(unhex(value ->> 11) AS TEXT),
    ` + nowUS + `, ` + nowUS + `,
    CAST(unhex(value ->> 12) AS TEXT), NULLIF(json(value -> 13), 'null')
FROM (SELECT key, value, row_number() OVER (PARTITION BY value ->> 7 ORDER BY key) AS nth FROM jsonb_each(?1))
WHERE value ->> 7 = '' OR (nth = 1 AND NOT EXISTS (SELECT 1 FROM fenced_jobs e WHERE e.idempotency_key = value ->> 7))
ORDER BY key
ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`

// EnqueueBulk implements driver.BulkEnqueuer: enqueueBulkSQL in one write
// transaction, or in the caller's, whose write lock it already holds; once
// for each run of jobs holding runBytes of args, in order.
func (d *Driver) EnqueueBulk(ctx context.Context, tx driver.Tx, jobs []driver.EnqueueParams) (int, error) {
	if hasUnique(jobs) {
		res, err := d.Enqueue(ctx, tx, jobs)
		n := 0
		for _, r := range res {
			if !r.Existing {
				n++
			}
		}
		return n, err
	}
	var args []string // one statement's ?1 for each run of jobs, in order
	for start := 0; start < len(jobs); {
		stop := bulkRunEnd(jobs, start)
		arg, err := bulkArgs(jobs[start:stop])
		if err != nil {
			return 0, fmt.Errorf("enqueue: %w", notMigrated(err))
		}
		args, start = append(args, arg), stop
	}
	var err error
	var n int64
	insert := func(tx *sql.Tx) error {
		n = 0
		for _, arg := range args {
			res, err := tx.ExecContext(ctx, enqueueBulkSQL, arg)
			if err != nil {
				return err
			}
			k, err := res.RowsAffected()
			if err != nil {
				return err
			}
			n += k
		}
		return nil
	}
	if tx != nil {
		var stx *sql.Tx
		if stx, err = sqlOf(tx); err != nil {
			return 0, err
		}
		err = insert(stx)
	} else {
		err = d.writeTx(ctx, insert)
	}
	if err != nil {
		return 0, fmt.Errorf("enqueue: %w", notMigrated(err))
	}
	return int(n), nil
}

// bulkRunEnd returns where the run of jobs inserted by one statement from
// start stops: once it holds runBytes of args.
func bulkRunEnd(jobs []driver.EnqueueParams, start int) int {
	size := 0
	for i := start; i < len(jobs); i++ {
		if i > start && size >= runBytes {
			return i
		}
		size += len(jobs[i].Args) + len(jobs[i].Metadata)
	}
	return len(jobs)
}

// bulkArgs is enqueueBulkSQL's ?1 for jobs. Kind, queue and keys go as JSON
// strings, which keep every byte of valid UTF-8: the client refuses names
// that are not (validName).
func bulkArgs(jobs []driver.EnqueueParams) (string, error) {
	elems := make([][14]any, len(jobs))
	for i, in := range jobs {
		var runAt any // none: null, run after the delay
		if !in.RunAt.IsZero() {
			runAt = in.RunAt.UnixMicro()
		}
		var meta any // none: null, stored as NULL
		if in.Metadata != nil {
			meta = hex.EncodeToString(in.Metadata)
		}
		var policy any // none: null, stored as NULL
		if in.Policy != nil {
			policy = hex.EncodeToString(in.Policy)
		}
		elems[i] = [14]any{in.Kind, in.Queue, hex.EncodeToString(in.Args), in.Priority,
			runAt, in.Delay.Microseconds(), in.MaxAttempts, in.IdempotencyKey,
			in.ConcurrencyKey, in.SequenceKey, in.SequenceContinueOnFailed, meta,
			policy, in.Tags} // nil tags: null, stored as NULL
	}
	b, err := json.Marshal(elems)
	return string(b), err
}
