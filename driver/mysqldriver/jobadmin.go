package mysqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/fenced/fenced/driver/internal/reads"
	"strings"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// cancelJobSQL cancels a pending or queued job at once and flags a running
// one; the running job's worker learns it at its next heartbeat. state is
// assigned last, as the others read it.
const cancelJobSQL = `
UPDATE fenced_jobs FORCE INDEX (PRIMARY) SET
    finished_at = IF(state IN ('pending', 'queued'), ` + now + `, finished_at),
    cancel_requested = (state = 'running'),
    updated_at = ` + now + `,
    state = IF(state IN ('pending', 'queued'), 'cancelled', state)
WHERE id = ? AND state IN ('pending', 'queued', 'running')`

// CancelJob implements driver.JobDriver. A task it cancels resolves its
// dependents in the same transaction (the release rule).
func (d *Driver) CancelJob(ctx context.Context, id int64) (*fencedtype.Job, error) {
	return d.jobAdmin(ctx, "cancel", id, cancelJobSQL, func(tx *sql.Tx, j *fencedtype.Job) error {
		if j.WorkflowID == 0 || j.State != fencedtype.JobCancelled {
			return nil
		}
		return workflowStep(ctx, tx, resolved{failed: []int64{j.ID}})
	})
}

// retryJobSQL puts a failed or cancelled job back to queued with a fresh
// budget of max_attempts more attempts; a task with a dependency still
// waiting goes to pending. It refuses a task its workflow cancelled, and
// one with a failed dependency that does not run anyway: retry that
// dependency. state is assigned first, from columns none assigns.
const retryJobSQL = `
UPDATE fenced_jobs FORCE INDEX (PRIMARY) SET
    state = IF(deps_waiting > 0, 'pending', 'queued'),
    run_at = ` + now + `, finished_at = NULL, cancel_requested = FALSE,
    max_attempts = attempt + max_attempts,
    updated_at = ` + now + `
WHERE id = ? AND state IN ('failed', 'cancelled') AND NOT workflow_cancelled AND (deps_failed = 0 OR run_anyway)`

// RetryJob implements driver.JobDriver. A task it retries takes its
// dependents out of their failure in the same transaction (the release
// rule); a task its workflow cancelled is refused
// (driver.TaskCancelledError).
func (d *Driver) RetryJob(ctx context.Context, id int64) (*fencedtype.Job, error) {
	return d.jobAdmin(ctx, "retry", id, retryJobSQL, func(tx *sql.Tx, j *fencedtype.Job) error {
		if j.WorkflowID == 0 {
			return nil
		}
		return workflowStep(ctx, tx, resolved{again: []int64{j.ID}})
	})
}

// jobAdmin runs a conditional state change and reads the job in the same
// transaction: the row it changed, or, when it changed nothing, the row
// (locked) that says why: ErrNotFound, a *fencedtype.JobStateError, or for
// a retry of a task in a retryable state, driver.TaskCancelledError. after
// runs in the transaction on the row changed.
func (d *Driver) jobAdmin(ctx context.Context, op string, id int64, query string, after func(*sql.Tx, *fencedtype.Job) error) (*fencedtype.Job, error) {
	var j *fencedtype.Job
	changed := false
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		n, err := execCount(ctx, tx, query, id)
		if ue := uniqueConflict(ctx, tx, op, id, err); ue != nil {
			return ue
		}
		if err != nil {
			return err
		}
		changed = n == 1
		if j, err = readJob(ctx, tx, jobLockSQL, id); err != nil || j == nil || !changed {
			return err
		}
		return after(tx, j)
	})
	var ue *fencedtype.UniqueConflictError
	switch {
	case errors.As(err, &ue):
		return nil, ue
	case err != nil:
		return nil, fmt.Errorf("%s job %d: %w", op, id, err)
	case j == nil:
		return nil, fencedtype.ErrNotFound
	case !changed && op == "retry" && j.WorkflowID != 0 && (j.State == fencedtype.JobFailed || j.State == fencedtype.JobCancelled):
		return nil, driver.TaskCancelledError(id, j.TaskName)
	case !changed:
		return nil, &fencedtype.JobStateError{Op: op, ID: id, State: j.State}
	}
	return j, nil
}

// jobWithAttemptsSQL reads a job and its ended attempts in one statement,
// so they agree with each other.
const jobWithAttemptsSQL = `
SELECT ` + jobColumns + `, a.attempt, a.fence, a.owner, a.started_at, a.ended_at, a.outcome, COALESCE(a.error, '')
FROM fenced_jobs j LEFT JOIN fenced_job_attempts a ON a.job_id = j.id
WHERE j.id = ?
ORDER BY a.attempt`

// GetJob implements driver.JobDriver.
func (d *Driver) GetJob(ctx context.Context, id int64) (*fencedtype.Job, []fencedtype.JobAttempt, error) {
	rows, err := d.db.QueryContext(ctx, jobWithAttemptsSQL, id)
	if err != nil {
		return nil, nil, fmt.Errorf("get job %d: %w", id, notMigrated(err))
	}
	defer rows.Close()
	var j *fencedtype.Job
	var attempts []fencedtype.JobAttempt
	for rows.Next() {
		var a struct {
			attempt, fence sql.NullInt64
			owner          []byte
			started, ended dbTime
			outcome, error sql.NullString
		}
		var s jobScan
		if err := rows.Scan(append(s.dest(), &a.attempt, &a.fence, &a.owner, &a.started, &a.ended, &a.outcome, &a.error)...); err != nil {
			return nil, nil, fmt.Errorf("get job %d: %w", id, notMigrated(err))
		}
		j = s.row()
		if a.attempt.Valid {
			attempts = append(attempts, fencedtype.JobAttempt{Attempt: int(a.attempt.Int64), Fence: a.fence.Int64,
				Owner: string(a.owner), StartedAt: a.started.Time, EndedAt: a.ended.ptr(),
				Outcome: a.outcome.String, Error: a.error.String})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("get job %d: %w", id, notMigrated(err))
	}
	if j == nil {
		return nil, nil, fencedtype.ErrNotFound
	}
	return j, driver.WithRowAttempts(j, attempts), nil
}

// ListJobs implements driver.JobDriver. Each filter adds a fixed condition
// with its own placeholder. A state's page reads the (state,
// lease_expires_at, id) index: running jobs' sorted, as many as run at
// once; any other state's in id order.
func (d *Driver) ListJobs(ctx context.Context, p fencedtype.JobFilter) ([]*fencedtype.Job, error) {
	query, args := listJobs(p)
	jobs, err := collectJobs(d.db.QueryContext(ctx, query, args...))
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", notMigrated(err))
	}
	return jobs, nil
}

// listJobs is ListJobs' statement for p and its arguments.
func listJobs(p fencedtype.JobFilter) (string, []any) {
	where, args := []string{"j.id > ?", "j.id < ?"}, []any{p.AfterID, reads.BeforeBound(p.BeforeID)}
	for _, f := range []struct{ cond, value string }{
		{"j.state = ?", string(p.State)}, {"j.queue = ?", p.Queue}, {"j.kind = ?", p.Kind},
	} {
		if f.value != "" {
			where, args = append(where, f.cond), append(args, f.value)
		}
	}
	if p.State != "" && p.State != fencedtype.JobRunning {
		// True of every job not running (a CHECK constraint), and what
		// lets the (state, lease_expires_at, id) index give the state's
		// jobs in id order (migration 9).
		where = append(where, "j.lease_expires_at IS NULL")
	}
	if p.Failing {
		where = append(where, "j.last_error IS NOT NULL")
	}
	if len(p.Tags) > 0 {
		cond := "JSON_OVERLAPS(j.tags, ?)"
		if p.TagsMatch == fencedtype.TagsAll {
			cond = "JSON_CONTAINS(j.tags, ?)"
		}
		where, args = append(where, cond), append(args, tagsJSON(p.Tags))
	}
	order := ""
	if p.Desc {
		order = " DESC"
	}
	return `SELECT ` + jobColumns + ` FROM fenced_jobs j WHERE ` + strings.Join(where, " AND ") + ` ORDER BY j.id` + order + ` LIMIT ?`,
		append(args, p.Limit)
}

// DeleteJob implements driver.JobDriver. The attempt history goes with the
// job (ON DELETE CASCADE). A workflow's task is refused
// (driver.TaskDeleteError): a workflow is deleted whole.
func (d *Driver) DeleteJob(ctx context.Context, id int64) error {
	var n int64
	var task *fencedtype.Job
	err := d.inTx(ctx, func(tx *sql.Tx) (err error) {
		task = nil
		n, err = execCount(ctx, tx, `DELETE FROM fenced_jobs WHERE id = ? AND workflow_id IS NULL`, id)
		if err != nil || n == 1 {
			return err
		}
		task, err = readJob(ctx, tx, jobLockSQL, id)
		return err
	})
	switch {
	case err != nil:
		return fmt.Errorf("delete job %d: %w", id, err)
	case task != nil:
		return driver.TaskDeleteError(id, task.TaskName, task.WorkflowID)
	case n == 0:
		return fencedtype.ErrNotFound
	}
	return nil
}

const countJobsSQL = `SELECT queue, state, COUNT(*) FROM fenced_jobs GROUP BY queue, state ORDER BY queue, state`

// CountJobs implements driver.JobDriver.
func (d *Driver) CountJobs(ctx context.Context) ([]fencedtype.JobCount, error) {
	counts, err := sqldb.CountJobs(ctx, d.db, countJobsSQL)
	return counts, notMigrated(err)
}
