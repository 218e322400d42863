package mysqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

var _ driver.WorkflowDriver = (*Driver)(nil)

// Workflows (docs/design.md §6.18): the workflow row in fenced_workflows,
// each task a job of fenced_jobs with its workflow_id and task_name, and
// one row of fenced_job_deps per edge (migration 15). The release rule is
// workflowStep, run in the transaction of every transition that finishes
// a task or takes it out of a finished state.

// insertWorkflowSQL inserts a workflow row. Parameter: its name.
const insertWorkflowSQL = `INSERT INTO fenced_workflows (name, created_at) VALUES (?, ` + now + `)`

// insertTaskSQL enqueues tasks, one VALUES row each (taskInsertRow): a
// job's columns as enqueueSQL writes them, then its workflow, name, state
// (pending with a dependency, else queued), edges waiting and run_anyway.
const (
	insertTaskSQL = `
INSERT INTO fenced_jobs (kind, queue, args, priority, run_at, max_attempts, idempotency_key,
    concurrency_key, sequence_key, sequence_continue_on_failed, metadata, created_at, updated_at,
    policy, tags, workflow_id, task_name, state, deps_waiting, run_anyway)
VALUES `
	taskInsertRow = `(` + jobInsertValues + `, ?, ?, ?, ?, ?)`
)

// taskIDsSQL reads the ids of a workflow's tasks by name, through the
// (workflow_id, task_name) key. Parameter: the workflow id; %s are names.
const taskIDsSQL = `SELECT id, task_name FROM fenced_jobs FORCE INDEX (fenced_jobs_task)
WHERE workflow_id = ?%s`

// EnqueueWorkflow implements driver.WorkflowDriver: in one transaction (or
// the caller's), the workflow row, every task's job and every edge, then
// the workflow read back with its tasks.
func (d *Driver) EnqueueWorkflow(ctx context.Context, tx driver.Tx, w driver.WorkflowParams) (*fencedtype.Workflow, error) {
	var out *fencedtype.Workflow
	err := d.inTxOr(ctx, tx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, insertWorkflowSQL, []byte(w.Name))
		if err != nil {
			return err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if err := insertTasks(ctx, tx, id, w.Tasks, nil); err != nil {
			return err
		}
		out, err = getWorkflow(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("enqueue workflow: %w", notMigrated(err))
	}
	return out, nil
}

// inTxOr runs fn inside the caller's transaction when tx is non-nil, or
// else in one of the driver's own (inTx).
func (d *Driver) inTxOr(ctx context.Context, tx driver.Tx, fn func(*sql.Tx) error) error {
	if tx == nil {
		return d.inTx(ctx, fn)
	}
	stx, err := sqlOf(tx)
	if err != nil {
		return err
	}
	return fn(stx)
}

// insertTasks inserts tasks into workflow wf, then their edges, all
// waiting: each task's dependencies are tasks among them or, in existing,
// tasks of the workflow by name (their ids). The caller resolves the
// edges of existing dependencies that already finished.
func insertTasks(ctx context.Context, tx *sql.Tx, wf int64, tasks []driver.WorkflowTaskParams, existing map[string]int64) error {
	for i := 0; i < len(tasks); {
		end, size := i, 0
		for end < len(tasks) && end-i < insertRunJobs && (end == i || size < insertRunBytes) {
			j := tasks[end].Job
			size += len(j.Args) + len(j.Metadata) + tagsSize(j.Tags) + len(tasks[end].Name)
			end++
		}
		rows := make([]string, 0, end-i)
		var args []any
		for _, t := range tasks[i:end] {
			state := fencedtype.JobQueued
			if len(t.DependsOn) > 0 {
				state = fencedtype.JobPending
			}
			rows = append(rows, taskInsertRow)
			args = append(append(args, insertArgs(t.Job)...), wf, []byte(t.Name), string(state), len(t.DependsOn), t.RunAnyway)
		}
		if _, err := tx.ExecContext(ctx, insertTaskSQL+strings.Join(rows, ", "), args...); err != nil {
			if isDuplicate(err) {
				return fencedtype.Invalid("task name", "a task of the workflow has one of the names given: %v", err)
			}
			return err
		}
		i = end
	}
	ids := make(map[string]int64, len(tasks)+len(existing))
	for name, id := range existing {
		ids[name] = id
	}
	filter := ""
	var args []any
	if existing != nil { // an addition: the new names only
		filter = ` AND task_name IN (` + placeholders(len(tasks)) + `)`
		for _, t := range tasks {
			args = append(args, []byte(t.Name))
		}
	}
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(taskIDsSQL, filter), append([]any{wf}, args...)...)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		var name []byte
		if err := rows.Scan(&id, &name); err != nil {
			rows.Close()
			return err
		}
		ids[string(name)] = id
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var edges []string
	flush := func() error {
		if len(edges) == 0 {
			return nil
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO fenced_job_deps (job_id, dep_id, status) VALUES `+strings.Join(edges, ", "))
		edges = edges[:0]
		return err
	}
	for _, t := range tasks {
		job, ok := ids[t.Name]
		if !ok {
			return fmt.Errorf("task %q not found after its insert", t.Name)
		}
		for _, dep := range t.DependsOn {
			did, ok := ids[dep]
			if !ok {
				return fencedtype.Invalid(fmt.Sprintf("task %q", t.Name), "depends on %q, which is no task of the workflow", dep)
			}
			edges = append(edges, fmt.Sprintf("(%d, %d, 0)", job, did))
			if len(edges) == 1000 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// existingTasksSQL reads, share-locked, the tasks of a workflow by name: a
// dependency finishing meanwhile waits for the addition and then sees its
// new edges, and one that finished is read as it finished. Parameters: the
// workflow id, then the names.
const existingTasksSQL = `SELECT id, task_name, state FROM fenced_jobs FORCE INDEX (fenced_jobs_task)
WHERE workflow_id = ? AND task_name IN (%s) LOCK IN SHARE MODE`

// AddWorkflowTasks implements driver.WorkflowDriver: guarded as JobTx
// guards ref (the row share-locked, the fence current, the lease
// unexpired), in the same transaction as the inserts. The existing tasks
// named (as dependencies, or as names the new tasks would take) are read
// share-locked before anything is written: an unknown dependency or a name
// taken is an *InvalidError and nothing is written. The new tasks' edges
// from dependencies that already finished are resolved at once, by the
// release rule.
func (d *Driver) AddWorkflowTasks(ctx context.Context, tx driver.Tx, ref fencedtype.JobRef, tasks []driver.WorkflowTaskParams) (*fencedtype.Workflow, error) {
	var out *fencedtype.Workflow
	err := d.inTxOr(ctx, tx, func(tx *sql.Tx) error {
		if err := d.GuardJob(ctx, tx, ref); err != nil {
			return err
		}
		var wf sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT workflow_id FROM fenced_jobs WHERE id = ? LOCK IN SHARE MODE`, ref.ID).Scan(&wf); err != nil {
			return err
		}
		if !wf.Valid {
			return fencedtype.Invalid("job", "job %d is no task of a workflow", ref.ID)
		}
		news := make(map[string]bool, len(tasks))
		for _, t := range tasks {
			news[t.Name] = true
		}
		var names []any
		seen := map[string]bool{}
		for _, t := range tasks {
			if !seen[t.Name] {
				seen[t.Name] = true
				names = append(names, []byte(t.Name))
			}
			for _, dep := range t.DependsOn {
				if !news[dep] && !seen[dep] {
					seen[dep] = true
					names = append(names, []byte(dep))
				}
			}
		}
		rows, err := tx.QueryContext(ctx, fmt.Sprintf(existingTasksSQL, placeholders(len(names))), append([]any{wf.Int64}, names...)...)
		if err != nil {
			return err
		}
		existing := map[string]int64{}
		states := map[string]fencedtype.JobState{}
		for rows.Next() {
			var id int64
			var name []byte
			var state string
			if err := rows.Scan(&id, &name, &state); err != nil {
				rows.Close()
				return err
			}
			existing[string(name)], states[string(name)] = id, fencedtype.JobState(state)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		var r resolved
		added := map[int64]bool{}
		for _, t := range tasks {
			if _, taken := existing[t.Name]; taken {
				return fencedtype.Invalid("task name", "workflow %d already has a task %q", wf.Int64, t.Name)
			}
			for _, dep := range t.DependsOn {
				if news[dep] {
					continue
				}
				id, ok := existing[dep]
				if !ok {
					return fencedtype.Invalid(fmt.Sprintf("task %q", t.Name), "depends on %q, which is no task of the workflow", dep)
				}
				if added[id] {
					continue
				}
				added[id] = true
				switch states[dep] {
				case fencedtype.JobSucceeded:
					r.done = append(r.done, id)
				case fencedtype.JobFailed, fencedtype.JobCancelled:
					r.failed = append(r.failed, id)
				}
			}
		}
		if err := insertTasks(ctx, tx, wf.Int64, tasks, existing); err != nil {
			return err
		}
		// The finished dependencies' only waiting edges are the new ones.
		if err := workflowStep(ctx, tx, r); err != nil {
			return err
		}
		out, err = getWorkflow(ctx, tx, wf.Int64)
		return err
	})
	if err != nil {
		var ie *fencedtype.InvalidError
		if errors.As(err, &ie) || isDiagnosis(err) {
			return nil, err
		}
		return nil, fmt.Errorf("add tasks to the workflow of job %d: %w", ref.ID, notMigrated(err))
	}
	return out, nil
}
