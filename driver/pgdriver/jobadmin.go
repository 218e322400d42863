package pgdriver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/reads"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
)

// cancelJobSQL cancels a queued job (or a pending workflow task) at once
// and flags a running one; the running job's worker learns it at its next
// heartbeat. A task's cancel cancels its dependents by the workflow's rule
// (the fenced_workflow_step trigger, in this statement).
const cancelJobSQL = `
UPDATE fenced_jobs j SET ` + cancelJobSet + `
WHERE j.id = $1 AND j.state IN ('pending', 'queued', 'running')
RETURNING ` + jobColumns + `, j.state = 'cancelled' AND j.sequence_key IS NOT NULL AND NOT j.held`

// cancelJobSet is the cancel of a job: a pending or queued one at once, a
// running one asked to stop.
const cancelJobSet = `
    state = CASE WHEN j.state IN ('queued', 'pending') THEN 'cancelled' ELSE j.state END,
    finished_at = CASE WHEN j.state IN ('queued', 'pending') THEN clock_timestamp() ELSE j.finished_at END,
    cancel_requested = (j.state = 'running'),
    updated_at = clock_timestamp()`

// CancelJob implements driver.JobDriver. A cancelled job that was its
// sequence's head (queued, not held) releases the next (jobhold.go).
func (d *Driver) CancelJob(ctx context.Context, id int64) (*fencedtype.Job, error) {
	var head bool
	j, err := d.jobAdmin(ctx, "cancel", id, cancelJobSQL, &head)
	if err == nil && head {
		_ = d.releaseSequences(ctx, []seqRelease{{queue: j.Queue, key: j.SequenceKey, after: j.ID}}) // else the sweep's
	}
	return j, err
}

// retryJobSet is the retry of a failed or cancelled job: queued (pending,
// for a workflow's task with a dependency still waiting) with a fresh
// budget of max_attempts more attempts. It leaves its lane (seq NULL): a
// job cancelled before it ever ran has fence 0, and its seq may be behind
// its lane's cursor. It is not held (a job cancelled while it was held
// was): if an earlier job of its sequence blocks it, the claim passes it
// over until that one ends, as it passes over any job it finds blocked.
const retryJobSet = `
    state = CASE WHEN j.deps_waiting > 0 THEN 'pending' ELSE 'queued' END, run_at = clock_timestamp(),
    finished_at = NULL, cancel_requested = false, seq = NULL, held = false,
    max_attempts = j.attempt + j.max_attempts,
    updated_at = clock_timestamp()`

// taskRunnable is true of a job unless it is a workflow's task that may not
// run: one its workflow cancelled, or one with a failed dependency that does
// not run anyway. Retrying it is refused: its dependency is what to retry.
const taskRunnable = `NOT (j.workflow_cancelled OR (j.deps_failed > 0 AND NOT j.run_anyway))`

// retryJobSQL retries one job (retryJobSet). A task's dependents wait for it
// again by the workflow's rule (the fenced_workflow_step trigger).
const retryJobSQL = `
UPDATE fenced_jobs j SET ` + retryJobSet + `
WHERE j.id = $1 AND j.state IN ('failed', 'cancelled') AND ` + taskRunnable + `
RETURNING ` + jobColumns

// RetryJob implements driver.JobDriver. A workflow's task that may not run
// (taskRunnable) is refused with driver.TaskCancelledError.
func (d *Driver) RetryJob(ctx context.Context, id int64) (*fencedtype.Job, error) {
	j, err := d.jobAdmin(ctx, "retry", id, retryJobSQL)
	var se *fencedtype.JobStateError
	if errors.As(err, &se) && se.State.Finished() {
		var task string
		if d.pool.QueryRow(ctx, `SELECT j.task_name FROM fenced_jobs j WHERE j.id = $1 AND NOT `+taskRunnable, id).
			Scan(&task) == nil {
			return nil, driver.TaskCancelledError(id, task)
		}
	}
	return j, err
}

// jobAdmin runs a conditional state change; zero rows is ErrNotFound or
// a *fencedtype.JobStateError naming the state found.
func (d *Driver) jobAdmin(ctx context.Context, op string, id int64, query string, extra ...any) (*fencedtype.Job, error) {
	j, err := newJobScanner(extra...).scan(d.pool.QueryRow(ctx, query, id))
	if err == nil {
		return j, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		if ue := d.uniqueConflict(ctx, op, id, err); ue != nil {
			return nil, ue
		}
		return nil, fmt.Errorf("%s job %d: %w", op, id, err)
	}
	cur, _, err := d.GetJob(ctx, id)
	if err != nil {
		return nil, err
	}
	return nil, &fencedtype.JobStateError{Op: op, ID: id, State: cur.State}
}

// GetJob implements driver.JobDriver.
func (d *Driver) GetJob(ctx context.Context, id int64) (j *fencedtype.Job, attempts []fencedtype.JobAttempt, err error) {
	// One snapshot for the row and its history: read apart, an end
	// committing between the two reads showed the job running with its
	// attempt already ended.
	err = d.readSnapshot(ctx, func(tx pgx.Tx) error {
		var err error
		if j, err = scanJob(tx.QueryRow(ctx, `SELECT `+jobColumns+` FROM fenced_jobs j WHERE j.id = $1`, id)); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT attempt, fence, owner, started_at, ended_at, outcome, COALESCE(error, '')
		FROM fenced_job_attempts WHERE job_id = $1 ORDER BY attempt`, id)
		if err != nil {
			return fmt.Errorf("attempts: %w", err)
		}
		attempts, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (fencedtype.JobAttempt, error) {
			var a fencedtype.JobAttempt
			err := r.Scan(&a.Attempt, &a.Fence, &a.Owner, &a.StartedAt, &a.EndedAt, &a.Outcome, &a.Error)
			return a, err
		})
		if err != nil {
			return fmt.Errorf("attempts: %w", err)
		}
		return nil
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, fencedtype.ErrNotFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("get job %d: %w", id, err)
	}
	return j, driver.WithRowAttempts(j, attempts), nil
}

// readSnapshot runs fn's reads in one read-only REPEATABLE READ
// transaction (one snapshot), begun as Begin is (retried while it could not
// be started), and rolls it back; fn's error passes through notMigrated.
func (d *Driver) readSnapshot(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := d.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return notMigrated(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	return notMigrated(fn(tx))
}

// ListJobs implements driver.JobDriver: one statement with a condition
// for each filter given (so that a state's page reads the (state, id)
// index) and the ids within (AfterID, BeforeID), a missing BeforeID passed
// as the largest id: either order is an index range, and a deep page costs
// what the first does. Running jobs are not in that index; their page
// reads fenced_jobs_running and sorts what it finds, as many rows as
// attempts run at once. A known state is written into the statement, not
// passed as a parameter, so that a plan made for any value (after a few
// runs of one statement) still knows which partial index holds it.
func (d *Driver) ListJobs(ctx context.Context, p fencedtype.JobFilter) ([]*fencedtype.Job, error) {
	where := []string{"j.id > $1", "j.id < $2"}
	args := []any{p.AfterID, reads.BeforeBound(p.BeforeID)}
	state := string(p.State)
	if p.State.Valid() {
		where, state = append(where, "j.state = '"+state+"'"), ""
	}
	for _, f := range []struct{ column, value string }{{"j.state", state}, {"j.queue", p.Queue}, {"j.kind", p.Kind}} {
		if f.value != "" {
			args = append(args, f.value)
			where = append(where, fmt.Sprintf("%s = $%d", f.column, len(args)))
		}
	}
	if p.Failing {
		where = append(where, "j.last_error IS NOT NULL")
	}
	if len(p.Tags) > 0 {
		// Either operator implies tags IS NOT NULL, so the planner may
		// read the partial GIN index fenced_jobs_tags (migration 17).
		op := "&&"
		if p.TagsMatch == fencedtype.TagsAll {
			op = "@>"
		}
		args = append(args, p.Tags)
		where = append(where, fmt.Sprintf("j.tags %s $%d::text[]", op, len(args)))
	}
	order := "ASC"
	if p.Desc {
		order = "DESC"
	}
	args = append(args, p.Limit)
	query := fmt.Sprintf(`SELECT %s FROM fenced_jobs j WHERE %s ORDER BY j.id %s LIMIT $%d`,
		jobColumns, strings.Join(where, " AND "), order, len(args))
	jobs, err := collectJobs(d.pool.Query(ctx, query, args...))
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, nil
}

// deleteJobSQL deletes a job, unless it is a workflow's task, and returns
// its queue and sequence key when it was its sequence's head (not held, and
// able to block the sequence).
var deleteJobSQL = `DELETE FROM fenced_jobs j WHERE j.id = $1 AND j.workflow_id IS NULL
RETURNING j.queue, CASE WHEN NOT j.held AND ` + blockingSQL + ` THEN j.sequence_key END`

// DeleteJob implements driver.JobDriver. The attempt history goes with the
// job (the fenced_jobs_delete_history trigger). A job that was its
// sequence's head releases the next (jobhold.go). A workflow's task is
// refused (driver.TaskDeleteError): a workflow is deleted whole.
func (d *Driver) DeleteJob(ctx context.Context, id int64) error {
	var queue string
	var key *string
	err := d.pool.QueryRow(ctx, deleteJobSQL, id).Scan(&queue, &key)
	if errors.Is(err, pgx.ErrNoRows) {
		var task string
		var workflow int64
		if d.pool.QueryRow(ctx, `SELECT task_name, workflow_id FROM fenced_jobs WHERE id = $1 AND workflow_id IS NOT NULL`, id).
			Scan(&task, &workflow) == nil {
			return driver.TaskDeleteError(id, task, workflow)
		}
		return fencedtype.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("delete job %d: %w", id, err)
	}
	if key != nil {
		_ = d.releaseSequences(ctx, []seqRelease{{queue: queue, key: *key, after: id}}) // else the sweep's
	}
	return nil
}

// CountJobs implements driver.JobDriver.
func (d *Driver) CountJobs(ctx context.Context) ([]fencedtype.JobCount, error) {
	rows, err := d.pool.Query(ctx, `SELECT queue, state, count(*) FROM fenced_jobs GROUP BY queue, state ORDER BY queue, state`)
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (fencedtype.JobCount, error) { return reads.ScanJobCount(r) })
}
