package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// recoverJobsSQL takes back running jobs whose lease expired by the database
// clock. The outer condition re-checks state and expiry on the very rows it
// updates (with one writer nothing can change between pick and update, but
// the statement says what it relies on). A job asked to cancel ends
// cancelled; one out of attempts ends failed; the rest go back to queued
// after the backoff of their attempt (backoffUS). Parameters: ?1 limit,
// ?2 base_us, ?3 max_us, ?4 jitter. Each row returned says whether the job
// is a workflow's task that it finished (failed or cancelled), whose
// dependents the release rule follows.
var recoverJobsSQL = `
UPDATE fenced_jobs SET
    state = CASE WHEN cancel_requested THEN 'cancelled'
                 WHEN attempt >= max_attempts THEN 'failed' ELSE 'queued' END,
    finished_us = CASE WHEN cancel_requested OR attempt >= max_attempts THEN ` + nowUS + ` END,
    run_at_us = ` + nowUS + ` + ` + backoffUS("attempt", "?2", "?3", "?4") + `,
    last_error = 'lease expired: worker ' || owner || ' stopped heartbeating',
    lease_expires_us = NULL,
    updated_us = ` + nowUS + `
WHERE id IN (
    SELECT id FROM fenced_jobs
    WHERE state = 'running' AND lease_expires_us <= ` + nowUS + `
    ORDER BY lease_expires_us
    LIMIT ?1)
  AND state = 'running' AND lease_expires_us <= ` + nowUS + `
RETURNING id, last_error, workflow_id IS NOT NULL AND state IN ('failed', 'cancelled')`

// lost is an attempt recoverJobsSQL took back: the job, the error it
// recorded, and whether it finished a workflow's task.
type lost struct {
	id       int64
	msg      string
	finished bool
}

func scanLost(row sqldb.Scanner) (lost, error) {
	var l lost
	err := row.Scan(&l.id, &l.msg, &l.finished)
	return l, err
}

// RecoverJobs implements driver.JobDriver: the take-back, the history rows
// of the lost attempts and the release rule for the tasks it finished
// (workflowStep: their dependents are cancelled, unless they run anyway)
// commit together.
func (d *Driver) RecoverJobs(ctx context.Context, guard *driver.LeaseRef, limit int, b fencedtype.Backoff) (int, error) {
	var n int
	err := d.maintenance(ctx, guard, func(tx *sql.Tx) error {
		taken, err := sqldb.All(ctx, tx, scanLost, recoverJobsSQL, limit, b.Base.Microseconds(), b.Max.Microseconds(), b.Jitter)
		if err != nil {
			return err
		}
		record, err := tx.PrepareContext(ctx, jobAttemptSQL)
		if err != nil {
			return err
		}
		defer record.Close()
		var finished []int64
		for _, l := range taken {
			if _, err := record.ExecContext(ctx, l.id, fencedtype.OutcomeLost, l.msg); err != nil {
				return fmt.Errorf("job %d history: %w", l.id, err)
			}
			if l.finished {
				finished = append(finished, l.id)
			}
		}
		n = len(taken)
		if len(finished) == 0 {
			return nil
		}
		slices.Sort(finished)
		return workflowStep(ctx, tx, finished, nil)
	})
	if err != nil {
		return 0, fmt.Errorf("recover expired jobs: %w", err)
	}
	return n, nil
}

// deleteFinishedJobsSQL deletes up to ?2 finished jobs older than ?1 µs
// that are no workflow's tasks (a task is deleted with its workflow only).
const deleteFinishedJobsSQL = `
DELETE FROM fenced_jobs WHERE id IN (
    SELECT id FROM fenced_jobs
    WHERE finished_us < ` + nowUS + ` - ?1 AND workflow_id IS NULL
    ORDER BY finished_us LIMIT ?2)
AND state IN ('succeeded', 'failed', 'cancelled') AND workflow_id IS NULL`

// finishedWorkflowsSQL picks, oldest first, up to ?2 workflows whose every
// task finished more than ?1 µs ago, with each one's number of tasks. It
// reads every workflow created before the age and, for each, its tasks by
// fenced_jobs_task until one has not finished so long ago.
const finishedWorkflowsSQL = `
SELECT w.id, (SELECT count(*) FROM fenced_jobs j WHERE j.workflow_id = w.id)
FROM fenced_workflows w
WHERE w.created_us < ` + nowUS + ` - ?1
    AND NOT EXISTS (SELECT 1 FROM fenced_jobs j WHERE j.workflow_id = w.id
        AND (j.finished_us IS NULL OR j.finished_us >= ` + nowUS + ` - ?1))
ORDER BY w.id LIMIT ?2`

// DeleteFinishedJobs implements driver.JobDriver, in one write transaction:
// up to limit finished jobs that are no workflow's tasks (their attempt
// history goes with them, ON DELETE CASCADE), and then whole workflows
// whose every task finished before age (deleteWorkflows: the workflow's
// row, its tasks, their histories and edges), oldest first, as many as
// hold limit tasks together, and at least one. The count is of jobs: the
// plain jobs plus the tasks of the workflows deleted, so a call deletes at
// most about twice limit jobs, more only for a single workflow of more
// than limit tasks, which goes whole.
func (d *Driver) DeleteFinishedJobs(ctx context.Context, guard *driver.LeaseRef, age time.Duration, limit int) (int, error) {
	var n int64
	err := d.maintenance(ctx, guard, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, deleteFinishedJobsSQL, age.Microseconds(), limit)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		type sized struct{ id, tasks int64 }
		found, err := sqldb.All(ctx, tx, func(r sqldb.Scanner) (sized, error) {
			var s sized
			return s, r.Scan(&s.id, &s.tasks)
		}, finishedWorkflowsSQL, age.Microseconds(), limit)
		if err != nil {
			return err
		}
		var ids []int64
		var tasks int64
		for _, w := range found {
			if len(ids) > 0 && tasks+w.tasks > int64(limit) {
				break
			}
			ids, tasks = append(ids, w.id), tasks+w.tasks
		}
		deleted, err := deleteWorkflows(ctx, tx, ids)
		n += deleted
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete finished jobs: %w", err)
	}
	return int(n), nil
}

// maintenance runs fn in a write transaction whose first statement, when a
// guard is given, checks the maintenance lease: a maintainer that lost its
// lease commits nothing.
func (d *Driver) maintenance(ctx context.Context, guard *driver.LeaseRef, fn func(*sql.Tx) error) error {
	return d.writeTx(ctx, func(tx *sql.Tx) error {
		if guard != nil {
			if err := d.GuardLease(ctx, tx, *guard); err != nil {
				return err
			}
		}
		return fn(tx)
	})
}
