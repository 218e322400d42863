package mysqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// uniqueBucketOf is the bucket of the run time %s over the period (a
// parameter, in seconds): its epoch seconds (run_at is UTC) divided by the
// period, 0 without one.
const uniqueBucketOf = `IF(? > 0, TIMESTAMPDIFF(SECOND, '1970-01-01 00:00:00', %s) DIV ?, 0)`

// enqueueUniqueSQL enqueues one unique job unless a job holds its slot (its
// unique_slot, the key and bucket while the holder's state is in its own
// unique states; migration 13) or its idempotency key. The lookups run
// before the insert, as enqueueKeyedSQL's does, so a repeat draws no
// auto-increment id; a holder committed since, or not yet committed,
// still meets the unique index on unique_slot. b computes run_at once and
// its bucket from it. Parameters: kind, queue, args, priority,
// max_attempts, idempotency key, concurrency key, sequence key,
// sequence_continue_on_failed, metadata, policy, tags, unique key, unique states,
// period, period, run_at or NULL, delay_us, unique key, idempotency key
// twice (uniqueArgs).
var enqueueUniqueSQL = `
INSERT INTO fenced_jobs (kind, queue, args, priority, run_at, max_attempts, idempotency_key,
    concurrency_key, sequence_key, sequence_continue_on_failed, metadata, created_at, updated_at,
    policy, tags, unique_key, unique_bucket, unique_states)
SELECT ?, ?, ?, ?, b.at, ?, ?, ?, ?, ?, ?, ` + now + `, ` + now + `, ?, ?, ?, b.bucket, ?
FROM (SELECT r.at, ` + fmt.Sprintf(uniqueBucketOf, "r.at") + ` AS bucket
    FROM (SELECT COALESCE(CAST(? AS DATETIME(6)), ` + now + ` + INTERVAL ? MICROSECOND) AS at) r) b
WHERE NOT EXISTS (SELECT 1 FROM fenced_jobs e WHERE e.unique_slot = CONCAT(?, CAST(b.bucket AS BINARY)))
    AND (? IS NULL OR NOT EXISTS (SELECT 1 FROM fenced_jobs e WHERE e.idempotency_key = ?))`

// uniqueArgs are enqueueUniqueSQL's arguments for p.
func uniqueArgs(p driver.EnqueueParams) []any {
	a := insertArgs(p) // kind, queue, args, priority, run_at, delay_us, max_attempts, key, ckey, skey, scont, meta, policy, tags
	return []any{a[0], a[1], a[2], a[3], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], p.UniqueKey, p.UniqueStates,
		p.UniquePeriod, p.UniquePeriod, a[4], a[5], p.UniqueKey, a[7], a[7]}
}

// uniqueHolderSQL reads, locking it, the job holding the slot of a unique
// job enqueueUniqueSQL skipped. Parameters: unique key, period, run_at or
// NULL, delay_us, period. Its bucket is computed again: at a window's
// edge, with run_at now, it may be the next window's, whose slot is free;
// the caller then inserts again.
var uniqueHolderSQL = `SELECT ` + jobColumns + ` FROM fenced_jobs j
WHERE j.unique_slot = CONCAT(?, CAST(` + fmt.Sprintf(uniqueBucketOf, `COALESCE(CAST(? AS DATETIME(6)), `+now+` + INTERVAL ? MICROSECOND)`) + ` AS BINARY))
LOCK IN SHARE MODE`

// oneUnique inserts the unique job jobs[i], or finds the job holding its
// slot or its idempotency key: a few tries, each of which either inserts
// or reads a holder unless the holder left its slot in between.
func (in *inserter) oneUnique(ctx context.Context, i int) error {
	p := in.jobs[i]
	var runAt any
	if !p.RunAt.IsZero() {
		runAt = timeArg(p.RunAt)
	}
	for try := 0; try < 3; try++ {
		res, err := in.tx.ExecContext(ctx, enqueueUniqueSQL, uniqueArgs(p)...)
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if err == nil && n == 1 {
			id, err := res.LastInsertId()
			in.inserted[i] = id
			return err
		}
		if err != nil && !isDuplicate(err) {
			return err
		}
		j, err := scanJob(in.tx.QueryRowContext(ctx, uniqueHolderSQL, p.UniqueKey, p.UniquePeriod, runAt, p.Delay.Microseconds(), p.UniquePeriod))
		if errors.Is(err, sql.ErrNoRows) && p.IdempotencyKey != "" {
			j, err = scanJob(in.tx.QueryRowContext(ctx, jobByKeySQL, p.IdempotencyKey))
		}
		if err == nil {
			in.out[i] = fencedtype.EnqueueResult{Job: j, Existing: true}
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read the job holding a unique slot: %w", err)
		}
	}
	return fmt.Errorf("job %d of %d: its unique slot stayed held by jobs that kept leaving it", i+1, len(in.jobs))
}

// uniqueHolderOfSQL finds the job holding the unique slot job ? would take
// when queued.
const uniqueHolderOfSQL = `SELECT e.id FROM fenced_jobs r JOIN fenced_jobs e
    ON e.unique_slot = CONCAT(r.unique_key, CAST(r.unique_bucket AS BINARY)) AND e.id <> r.id
WHERE r.id = ? LIMIT 1`

// uniqueConflict turns a state change of job id refused by the unique
// index into a *fencedtype.UniqueConflictError naming the holder, read in
// tx, or returns nil for any other error.
func uniqueConflict(ctx context.Context, tx *sql.Tx, op string, id int64, err error) error {
	if err == nil || !isDuplicate(err) {
		return nil
	}
	e := &fencedtype.UniqueConflictError{Op: op, ID: id}
	if rerr := tx.QueryRowContext(ctx, uniqueHolderOfSQL, id).Scan(&e.ExistingID); rerr != nil && !errors.Is(rerr, sql.ErrNoRows) {
		return rerr
	}
	return e
}
