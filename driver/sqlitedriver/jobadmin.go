package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/fenced/fenced/driver/internal/reads"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// cancelJobSQL cancels a queued job (or a pending workflow task) at once
// and flags a running one; the running job's worker learns it at its next
// heartbeat.
const cancelJobSQL = cancelJobSet + `
WHERE id = ?1 AND state IN ('pending', 'queued', 'running')
RETURNING ` + jobColumns

// cancelJobSet is the cancel's UPDATE and SET, which a workflow's cancel
// (cancelTasksSQL) shares: a pending or queued job is cancelled, a running
// one asked to stop.
const cancelJobSet = `
UPDATE fenced_jobs SET
    state = CASE WHEN state IN ('pending', 'queued') THEN 'cancelled' ELSE state END,
    finished_us = CASE WHEN state IN ('pending', 'queued') THEN ` + nowUS + ` ELSE finished_us END,
    cancel_requested = (state = 'running'),
    updated_us = ` + nowUS

// CancelJob implements driver.JobDriver. A task it cancels cancels its
// dependents by the workflow's rule (workflowStep), in the same
// transaction.
func (d *Driver) CancelJob(ctx context.Context, id int64) (*fencedtype.Job, error) {
	return d.jobAdmin(ctx, "cancel", id, cancelJobSQL, func(tx *sql.Tx, j *fencedtype.Job) error {
		if j.WorkflowID == 0 || j.State != fencedtype.JobCancelled {
			return nil
		}
		return workflowStep(ctx, tx, []int64{j.ID}, nil)
	})
}

// taskRunnable is true of a job unless it is a workflow's task that may
// not run: one its workflow cancelled, or one with a failed dependency
// that does not run anyway (an operator cancelled it, and then its
// dependency failed). A retry of it is refused: its dependency is what to
// retry.
const taskRunnable = `NOT (workflow_cancelled OR (deps_failed > 0 AND NOT run_anyway))`

// retryJobSet is the retry of a failed or cancelled job: queued (pending,
// for a workflow's task with a dependency still waiting) with a fresh
// budget of max_attempts more attempts.
const retryJobSet = `
    state = CASE WHEN deps_waiting > 0 THEN 'pending' ELSE 'queued' END,
    run_at_us = ` + nowUS + `, finished_us = NULL, cancel_requested = 0,
    max_attempts = attempt + max_attempts,
    updated_us = ` + nowUS

// retryJobSQL retries one job (retryJobSet) that may run (taskRunnable).
const retryJobSQL = `
UPDATE fenced_jobs SET ` + retryJobSet + `
WHERE id = ?1 AND state IN ('failed', 'cancelled') AND ` + taskRunnable + `
RETURNING ` + jobColumns

// RetryJob implements driver.JobDriver. A task's dependents wait for it
// again by the workflow's rule (workflowRetried), in the same transaction;
// a task that may not run (taskRunnable) is refused with
// driver.TaskCancelledError.
func (d *Driver) RetryJob(ctx context.Context, id int64) (*fencedtype.Job, error) {
	return d.jobAdmin(ctx, "retry", id, retryJobSQL, func(tx *sql.Tx, j *fencedtype.Job) error {
		if j.WorkflowID == 0 {
			return nil
		}
		return workflowRetried(ctx, tx, []int64{j.ID})
	})
}

// refusedTaskSQL reads the name of task ?1 when it is finished and may not
// run (taskRunnable): why retryJobSQL changed nothing.
const refusedTaskSQL = `SELECT task_name FROM fenced_jobs
WHERE id = ?1 AND workflow_id IS NOT NULL AND state IN ('failed', 'cancelled') AND NOT ` + taskRunnable

// jobAdmin runs a conditional state change and then after (the release
// rule of a task it changed), in one write transaction; zero rows is
// ErrNotFound, a *fencedtype.JobStateError naming the state read in the
// same transaction, or, for a retry, driver.TaskCancelledError.
func (d *Driver) jobAdmin(ctx context.Context, op string, id int64, query string, after func(*sql.Tx, *fencedtype.Job) error) (*fencedtype.Job, error) {
	var j, cur *fencedtype.Job
	var refused error
	err := d.writeTx(ctx, func(tx *sql.Tx) (err error) {
		j, cur, refused = nil, nil, nil
		j, err = scanJob(tx.QueryRowContext(ctx, query, id))
		if err == nil {
			return after(tx, j)
		}
		if ue := uniqueConflict(ctx, tx, op, id, err); ue != nil {
			return ue
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		j = nil
		if cur, err = readJob(ctx, tx, id); err != nil || cur == nil || op != "retry" {
			return err
		}
		var task string
		switch err := tx.QueryRowContext(ctx, refusedTaskSQL, id).Scan(&task); {
		case err == nil:
			refused = driver.TaskCancelledError(id, task)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		return nil
	})
	var ue *fencedtype.UniqueConflictError
	switch {
	case errors.As(err, &ue):
		return nil, ue
	case err != nil:
		return nil, fmt.Errorf("%s job %d: %w", op, id, err)
	case j != nil:
		return j, nil
	case refused != nil:
		return nil, refused
	case cur == nil:
		return nil, fencedtype.ErrNotFound
	}
	return nil, &fencedtype.JobStateError{Op: op, ID: id, State: cur.State}
}

const jobAttemptsSQL = `SELECT attempt, fence, owner, started_us, ended_us, outcome, COALESCE(error, '')
FROM fenced_job_attempts WHERE job_id = ?1 ORDER BY attempt`

// GetJob implements driver.JobDriver. The job and its history are read in
// one (deferred, read-only) transaction, so they agree with each other.
func (d *Driver) GetJob(ctx context.Context, id int64) (*fencedtype.Job, []fencedtype.JobAttempt, error) {
	tx, err := d.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, fmt.Errorf("get job %d: %w", id, err)
	}
	defer tx.Rollback()
	j, err := readJob(ctx, tx, id)
	if err != nil {
		return nil, nil, fmt.Errorf("get job %d: %w", id, notMigrated(err))
	}
	if j == nil {
		return nil, nil, fencedtype.ErrNotFound
	}
	attempts, err := readAttempts(ctx, tx, id)
	if err != nil {
		return nil, nil, fmt.Errorf("get job %d attempts: %w", id, notMigrated(err))
	}
	return j, driver.WithRowAttempts(j, attempts), nil
}

func readAttempts(ctx context.Context, tx *sql.Tx, id int64) ([]fencedtype.JobAttempt, error) {
	return sqldb.All(ctx, tx, scanAttempt, jobAttemptsSQL, id)
}

func scanAttempt(row sqldb.Scanner) (fencedtype.JobAttempt, error) {
	var a fencedtype.JobAttempt
	var started int64
	var ended sql.NullInt64
	err := row.Scan(&a.Attempt, &a.Fence, &a.Owner, &started, &ended, &a.Outcome, &a.Error)
	a.StartedAt, a.EndedAt = usTime(started), usTimePtr(ended)
	return a, err
}

// listJobsSQL lists jobs within (after, before) by id; %s is the order.
// A missing BeforeID is passed as the largest id, so both bounds are
// plain comparisons on the primary key.
const listJobsSQL = `SELECT ` + jobColumns + ` FROM fenced_jobs
WHERE (?1 = '' OR state = ?1) AND (?2 = '' OR queue = ?2) AND (?3 = '' OR kind = ?3) AND id > ?4 AND id < ?6
    AND (?7 = 0 OR last_error IS NOT NULL)
    AND (?8 IS NULL OR (?9 = 0 AND EXISTS (SELECT 1 FROM json_each(tags) t WHERE t.value IN (SELECT value FROM json_each(?8))))
        OR (?9 = 1 AND tags IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM json_each(?8) w WHERE w.value NOT IN (SELECT value FROM json_each(tags)))))
ORDER BY id %s LIMIT ?5`

var (
	listJobsAscSQL  = fmt.Sprintf(listJobsSQL, "ASC")
	listJobsDescSQL = fmt.Sprintf(listJobsSQL, "DESC")
)

// ListJobs implements driver.JobDriver.
func (d *Driver) ListJobs(ctx context.Context, p fencedtype.JobFilter) ([]*fencedtype.Job, error) {
	query := listJobsAscSQL
	if p.Desc {
		query = listJobsDescSQL
	}
	jobs, err := sqldb.All(ctx, d.db, scanJob, query, string(p.State), p.Queue, p.Kind, p.AfterID, p.Limit,
		reads.BeforeBound(p.BeforeID), p.Failing,
		tagsJSON(p.Tags), p.TagsMatch == fencedtype.TagsAll)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", notMigrated(err))
	}
	return jobs, nil
}

// deleteJobSQL deletes job ?1 unless it is a workflow's task.
const deleteJobSQL = `DELETE FROM fenced_jobs WHERE id = ?1 AND workflow_id IS NULL`

// DeleteJob implements driver.JobDriver. The attempt history goes with the
// job (ON DELETE CASCADE). A workflow's task is refused
// (driver.TaskDeleteError): a workflow is deleted whole (DeleteWorkflow).
func (d *Driver) DeleteJob(ctx context.Context, id int64) error {
	var n int64
	var refused error
	err := d.writeTx(ctx, func(tx *sql.Tx) error {
		refused = nil
		res, err := tx.ExecContext(ctx, deleteJobSQL, id)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil || n > 0 {
			return err
		}
		var task string
		var workflow int64
		err = tx.QueryRowContext(ctx, `SELECT task_name, workflow_id FROM fenced_jobs WHERE id = ?1 AND workflow_id IS NOT NULL`, id).
			Scan(&task, &workflow)
		switch {
		case err == nil:
			refused = driver.TaskDeleteError(id, task, workflow)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		return nil
	})
	switch {
	case err != nil:
		return fmt.Errorf("delete job %d: %w", id, err)
	case refused != nil:
		return refused
	case n == 0:
		return fencedtype.ErrNotFound
	}
	return nil
}

const countJobsSQL = `SELECT queue, state, count(*) FROM fenced_jobs GROUP BY queue, state ORDER BY queue, state`

// CountJobs implements driver.JobDriver.
func (d *Driver) CountJobs(ctx context.Context) ([]fencedtype.JobCount, error) {
	counts, err := sqldb.CountJobs(ctx, d.db, countJobsSQL)
	return counts, notMigrated(err)
}
