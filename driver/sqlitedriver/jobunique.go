package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// uniqueHeld is the predicate of the partial index fenced_jobs_unique
// (migration 13) on the columns prefixed %[1]s: a unique job holds its
// slot while its state is one of its own unique states. A query states it
// as the index does, so the planner uses the index.
const uniqueHeld = `%[1]sunique_key IS NOT NULL AND (%[1]sunique_states & CASE %[1]sstate WHEN 'queued' THEN 1 WHEN 'running' THEN 2
        WHEN 'succeeded' THEN 4 WHEN 'failed' THEN 8 WHEN 'cancelled' THEN 16 ELSE 0 END) <> 0`

// uniqueBucket is the bucket of run_at ?5 (or now plus delay ?6) over the
// period ?16 in seconds: the floor of its epoch seconds over the period, 0
// without one.
const uniqueBucket = `CASE WHEN ?16 > 0 THEN (COALESCE(?5, ` + nowUS + ` + ?6) / 1000000) / ?16 ELSE 0 END`

// enqueueUniqueSQL enqueues one job of a batch holding a unique job, as
// enqueueSQL does (its parameters ?1 to ?14, enqueueArgs), with ?15 its
// unique key (NULL for none), ?16 its period in seconds and ?17 its unique
// states; it inserts nothing when a job holds its slot or its idempotency
// key. The write lock is held, so the NOT EXISTS lookups are exact and draw
// no id for a repeat; ON CONFLICT (the partial unique index among the
// arbiters) stays as the guarantee. 'now' is one reading within a
// statement, so run_at and its bucket agree.
var enqueueUniqueSQL = `
INSERT INTO fenced_jobs (kind, queue, args, priority, run_at_us, max_attempts, idempotency_key,
    concurrency_key, sequence_key, sequence_continue_on_failed, metadata, created_us, updated_us,
    policy, tags, unique_key, unique_bucket, unique_states)
SELECT ?1, ?2, ?3, ?4, COALESCE(?5, ` + nowUS + ` + ?6), ?7, NULLIF(?8, ''),
    NULLIF(?9, ''), NULLIF(?10, ''), ?11, ?12, ` + nowUS + `, ` + nowUS + `,
    ?13, ?14, ?15, CASE WHEN ?15 IS NULL THEN NULL ELSE ` + uniqueBucket + ` END, CASE WHEN ?15 IS NULL THEN NULL ELSE ?17 END
WHERE NOT EXISTS (SELECT 1 FROM fenced_jobs e WHERE e.idempotency_key = NULLIF(?8, ''))
    AND (?15 IS NULL OR NOT EXISTS (SELECT 1 FROM fenced_jobs e
        WHERE e.unique_key = ?15 AND e.unique_bucket = ` + uniqueBucket + ` AND ` + fmt.Sprintf(uniqueHeld, "e.") + `))
ON CONFLICT DO NOTHING
RETURNING ` + jobColumns

// uniqueHolderSQL reads the job holding the slot or the idempotency key of
// a job enqueueUniqueSQL skipped (same parameters). Its bucket is computed
// again: at a window's edge, with run_at now, it may be the next window's,
// whose slot is free; the caller then inserts again.
var uniqueHolderSQL = `SELECT ` + jobColumns + ` FROM fenced_jobs
WHERE (?15 IS NOT NULL AND unique_key = ?15 AND unique_bucket = ` + uniqueBucket + ` AND ` + fmt.Sprintf(uniqueHeld, "") + `)
    OR idempotency_key = NULLIF(?8, '')
LIMIT 1`

// hasUnique tells whether a job of the batch is unique.
func hasUnique(jobs []driver.EnqueueParams) bool {
	for i := range jobs {
		if jobs[i].UniqueKey != nil {
			return true
		}
	}
	return false
}

// insertUnique is insertJobs for a batch holding a unique job: each job by
// enqueueUniqueSQL, or read back by uniqueHolderSQL, in tx.
func insertUnique(ctx context.Context, tx *sql.Tx, jobs []driver.EnqueueParams) ([]fencedtype.EnqueueResult, error) {
	out := make([]fencedtype.EnqueueResult, len(jobs))
	for i, in := range jobs {
		var key any // NULL
		if in.UniqueKey != nil {
			key = in.UniqueKey
		}
		args := append(enqueueArgs(in), key, in.UniquePeriod, in.UniqueStates)
		for try := 0; ; try++ {
			j, err := scanJob(tx.QueryRowContext(ctx, enqueueUniqueSQL, args...))
			if err == nil {
				out[i].Job = j
				break
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return nil, err
			}
			j, err = scanJob(tx.QueryRowContext(ctx, uniqueHolderSQL, args...))
			if err == nil {
				out[i] = fencedtype.EnqueueResult{Job: j, Existing: true}
				break
			}
			if !errors.Is(err, sql.ErrNoRows) || try == 2 {
				return nil, fmt.Errorf("read the job holding the unique slot or key of job %d: %w", i+1, err)
			}
		}
	}
	return out, nil
}

// uniqueHolderOfSQL finds the job holding the unique slot of job ?1.
var uniqueHolderOfSQL = `SELECT e.id FROM fenced_jobs r JOIN fenced_jobs e ON e.unique_key = r.unique_key
    AND e.unique_bucket = r.unique_bucket AND e.id <> r.id AND ` + fmt.Sprintf(uniqueHeld, "e.") + `
WHERE r.id = ?1 LIMIT 1`

// uniqueConflict turns a state change of job id refused by the unique
// index into a *fencedtype.UniqueConflictError naming the holder, read in
// tx, or returns nil for any other error.
func uniqueConflict(ctx context.Context, tx *sql.Tx, op string, id int64, err error) error {
	if err == nil || !strings.Contains(err.Error(), "UNIQUE constraint failed: fenced_jobs.unique_key") {
		return nil
	}
	e := &fencedtype.UniqueConflictError{Op: op, ID: id}
	if rerr := tx.QueryRowContext(ctx, uniqueHolderOfSQL, id).Scan(&e.ExistingID); rerr != nil && !errors.Is(rerr, sql.ErrNoRows) {
		return rerr
	}
	return e
}
