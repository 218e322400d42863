package mysqldriver

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// jobExpiredSQL picks running jobs whose lease expired by the database
// clock, skipping rows a worker or another maintainer has locked.
// Parameter: limit.
const jobExpiredSQL = `
SELECT id, fence, workflow_id IS NOT NULL FROM fenced_jobs
WHERE state = 'running' AND lease_expires_at <= ` + now + `
ORDER BY lease_expires_at
LIMIT ?
FOR UPDATE SKIP LOCKED`

// recoverJobsSQL takes back the picked jobs. It re-checks state, the fence
// observed by the pick and the expiry, so it can never overwrite a job that
// finished or was re-claimed in between (the pick's locks already prevent
// that; the statement says what it relies on). A job asked to cancel ends
// cancelled; one out of attempts ends failed; the rest go back to queued
// after the backoff of their attempt (backoffUS). state is assigned first
// and read by nothing after it. Parameters: max_us, base_us, jitter, the
// ids, then the (id, fence) pairs.
var recoverJobsSQL = `
UPDATE fenced_jobs FORCE INDEX (PRIMARY) SET
    state = CASE WHEN cancel_requested THEN 'cancelled'
                 WHEN attempt >= max_attempts THEN 'failed' ELSE 'queued' END,
    finished_at = CASE WHEN cancel_requested OR attempt >= max_attempts THEN ` + now + ` END,
    run_at = ` + now + ` + INTERVAL ` + backoffUS("attempt", "?", "?", "?") + ` MICROSECOND,
    last_error = CONCAT('lease expired: worker ', CONVERT(owner USING utf8mb4), ' stopped heartbeating'),
    lease_expires_at = NULL,
    updated_at = ` + now + `
WHERE id IN (%s) AND (id, fence) IN (%s) AND state = 'running' AND lease_expires_at <= ` + now

// jobLostSQL records the taken-back attempts, read from the rows the
// recovery left (updated_at is its clock reading).
const jobLostSQL = `
INSERT INTO fenced_job_attempts (job_id, attempt, fence, owner, started_at, ended_at, outcome, error)
SELECT id, attempt, fence, owner, attempted_at, updated_at, 'lost', last_error
FROM fenced_jobs WHERE id IN (%s)`

// RecoverJobs implements driver.JobDriver: pick, take back and record in one
// transaction, guarded by the maintenance lease when one is given.
func (d *Driver) RecoverJobs(ctx context.Context, guard *driver.LeaseRef, limit int, b fencedtype.Backoff) (int, error) {
	var n int
	err := d.maintenance(ctx, guard, func(tx *sql.Tx) error {
		n = 0
		rows, err := tx.QueryContext(ctx, jobExpiredSQL, limit)
		if err != nil {
			return err
		}
		var ids, tasks []int64
		var pairs []any
		for rows.Next() {
			var id, fence int64
			var task bool
			if err := rows.Scan(&id, &fence, &task); err != nil {
				rows.Close()
				return err
			}
			ids, pairs = append(ids, id), append(pairs, id, fence)
			if task {
				tasks = append(tasks, id)
			}
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return err
		}
		args := append([]any{b.Max.Microseconds(), b.Base.Microseconds(), b.Jitter}, anys(ids)...)
		taken, err := execCount(ctx, tx, fmt.Sprintf(recoverJobsSQL, placeholders(len(ids)), pairPlaceholders(len(ids))), append(args, pairs...)...)
		if err != nil {
			return err
		}
		if taken != int64(len(ids)) {
			return fmt.Errorf("took back %d of %d locked jobs", taken, len(ids))
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(jobLostSQL, placeholders(len(ids))), anys(ids)...); err != nil {
			return fmt.Errorf("history: %w", err)
		}
		// A task recovery ended (out of attempts, or asked to cancel)
		// resolves its dependents in the same transaction.
		if err := releaseEnded(ctx, tx, tasks); err != nil {
			return err
		}
		n = len(ids)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("recover expired jobs: %w", err)
	}
	return n, nil
}

// jobOldFinishedSQL picks the oldest finished jobs, skipping rows another
// transaction holds (a retry taking one out of its finished state).
// Parameters: age_us, limit.
const jobOldFinishedSQL = `
SELECT id FROM fenced_jobs
WHERE finished_at < ` + now + ` - INTERVAL ? MICROSECOND AND workflow_id IS NULL
ORDER BY finished_at
LIMIT ?
FOR UPDATE SKIP LOCKED`

// deleteFinishedJobsSQL deletes the picked (and locked) jobs, repeating the
// conditions the statement relies on. It is written as a multiple-table
// DELETE, the form that takes an index hint. Parameters: the ids, then
// age_us.
const deleteFinishedJobsSQL = `
DELETE j FROM fenced_jobs j FORCE INDEX (PRIMARY)
WHERE j.id IN (%s) AND j.state IN ('succeeded', 'failed', 'cancelled') AND j.workflow_id IS NULL
    AND j.finished_at < ` + now + ` - INTERVAL ? MICROSECOND`

// DeleteFinishedJobs implements driver.JobDriver. Attempt history goes with
// its job (ON DELETE CASCADE, which the affected-row count leaves out); the
// count is of jobs. A workflow's task is never deleted alone: with room
// left in limit, whole workflows whose every task finished before the age
// go too (deleteOldWorkflows), their tasks counted.
func (d *Driver) DeleteFinishedJobs(ctx context.Context, guard *driver.LeaseRef, age time.Duration, limit int) (int, error) {
	var n int64
	err := d.maintenance(ctx, guard, func(tx *sql.Tx) error {
		n = 0
		ids, err := collectIDs(tx.QueryContext(ctx, jobOldFinishedSQL, age.Microseconds(), limit))
		if err != nil {
			return err
		}
		if len(ids) > 0 {
			if n, err = execCount(ctx, tx, fmt.Sprintf(deleteFinishedJobsSQL, placeholders(len(ids))),
				append(anys(ids), age.Microseconds())...); err != nil {
				return err
			}
		}
		if int(n) < limit {
			k, err := deleteOldWorkflows(ctx, tx, age, limit-int(n))
			n += int64(k)
			return err
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete finished jobs: %w", err)
	}
	return int(n), nil
}

// maintenance runs fn in a transaction whose first statement, when a guard
// is given, share-locks and checks the maintenance lease: a maintainer that
// lost its lease commits nothing.
func (d *Driver) maintenance(ctx context.Context, guard *driver.LeaseRef, fn func(*sql.Tx) error) error {
	return d.inTx(ctx, func(tx *sql.Tx) error {
		if guard != nil {
			if err := d.GuardLease(ctx, tx, *guard); err != nil {
				return err
			}
		}
		return fn(tx)
	})
}
