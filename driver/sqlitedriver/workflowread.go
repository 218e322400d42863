package sqlitedriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/reads"
	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// GetWorkflow implements driver.WorkflowDriver: the workflow and its tasks
// in one (deferred, read-only) transaction, so they agree with each other.
func (d *Driver) GetWorkflow(ctx context.Context, id int64) (*fencedtype.Workflow, error) {
	tx, err := d.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("get workflow %d: %w", id, err)
	}
	defer tx.Rollback()
	w, err := readWorkflow(ctx, tx, id)
	if err != nil && !errors.Is(err, fencedtype.ErrNotFound) {
		return nil, fmt.Errorf("get workflow %d: %w", id, notMigrated(err))
	}
	return w, err
}

// workflowTasksSQL reads the tasks of workflow ?1 by job id, each with the
// names of its dependencies (a JSON array).
const workflowTasksSQL = `
SELECT j.id, j.task_name, j.kind, j.queue, j.state, j.run_anyway, j.workflow_cancelled,
    (SELECT json_group_array(d.task_name) FROM fenced_job_deps e JOIN fenced_jobs d ON d.id = e.dep_id
        WHERE e.job_id = j.id)
FROM fenced_jobs j WHERE j.workflow_id = ?1
ORDER BY j.id`

// readWorkflow reads workflow id with its tasks through q (two
// statements); ErrNotFound when there is none.
func readWorkflow(ctx context.Context, q sqldb.Querier, id int64) (*fencedtype.Workflow, error) {
	w := &fencedtype.Workflow{ID: id, Counts: map[fencedtype.JobState]int{}}
	var created int64
	var cancelled sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT name, created_us, cancelled_us FROM fenced_workflows WHERE id = ?1`, id).
		Scan(&w.Name, &created, &cancelled)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fencedtype.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	w.CreatedAt, w.CancelledAt = usTime(created), usTimePtr(cancelled)
	w.Tasks, err = sqldb.All(ctx, q, scanTask, workflowTasksSQL, id)
	if err != nil {
		return nil, err
	}
	for _, t := range w.Tasks {
		w.Counts[t.State]++
	}
	w.State = driver.WorkflowStateOf(w.Counts, w.CancelledAt != nil)
	return w, nil
}

func scanTask(row sqldb.Scanner) (fencedtype.WorkflowTask, error) {
	var t fencedtype.WorkflowTask
	var state string
	var deps []byte
	if err := row.Scan(&t.JobID, &t.Name, &t.Kind, &t.Queue, &state, &t.RunAnyway, &t.CancelledByWorkflow, &deps); err != nil {
		return t, err
	}
	t.State = fencedtype.JobState(state)
	t.DependsOn = []string{}
	if err := json.Unmarshal(deps, &t.DependsOn); err != nil {
		return t, fmt.Errorf("task %d: dependencies %q: %w", t.JobID, deps, err)
	}
	slices.Sort(t.DependsOn)
	return t, nil
}

// listWorkflowsSQL lists the workflows within (?1, ?2) by id, at most ?4,
// with their tasks' counts by state (one row per workflow and state; the
// tasks read by fenced_jobs_task's prefix). %[1]s is the order, %[2]s the
// name filter: none, or ?3 (then fenced_workflows_name serves the page in
// id order).
const listWorkflowsSQL = `
SELECT w.id, w.name, w.created_us, w.cancelled_us, j.state, count(j.id)
FROM (SELECT id, name, created_us, cancelled_us FROM fenced_workflows
      WHERE id > ?1 AND id < ?2%[2]s
      ORDER BY id %[1]s LIMIT ?4) AS w
LEFT JOIN fenced_jobs j ON j.workflow_id = w.id
GROUP BY w.id, j.state
ORDER BY w.id %[1]s`

// The listings of each order, without and with a name.
var (
	listWorkflowsAscSQL       = fmt.Sprintf(listWorkflowsSQL, "ASC", "")
	listWorkflowsDescSQL      = fmt.Sprintf(listWorkflowsSQL, "DESC", "")
	listNamedWorkflowsAscSQL  = fmt.Sprintf(listWorkflowsSQL, "ASC", " AND name = ?3")
	listNamedWorkflowsDescSQL = fmt.Sprintf(listWorkflowsSQL, "DESC", " AND name = ?3")
)

// ListWorkflows implements driver.WorkflowDriver: one statement.
func (d *Driver) ListWorkflows(ctx context.Context, f fencedtype.WorkflowFilter) ([]*fencedtype.Workflow, error) {
	var query string
	switch named := f.Name != ""; {
	case named && f.Desc:
		query = listNamedWorkflowsDescSQL
	case named:
		query = listNamedWorkflowsAscSQL
	case f.Desc:
		query = listWorkflowsDescSQL
	default:
		query = listWorkflowsAscSQL
	}
	rows, err := d.db.QueryContext(ctx, query, f.AfterID, reads.BeforeBound(f.BeforeID), f.Name, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("list workflows: %w", notMigrated(err))
	}
	defer rows.Close()
	var out []*fencedtype.Workflow
	for rows.Next() {
		var id, created int64
		var name string
		var cancelled sql.NullInt64
		var state sql.NullString
		var n int
		if err := rows.Scan(&id, &name, &created, &cancelled, &state, &n); err != nil {
			return nil, fmt.Errorf("list workflows: %w", err)
		}
		if len(out) == 0 || out[len(out)-1].ID != id {
			out = append(out, &fencedtype.Workflow{ID: id, Name: name, CreatedAt: usTime(created),
				CancelledAt: usTimePtr(cancelled), Counts: map[fencedtype.JobState]int{}})
		}
		if state.Valid {
			out[len(out)-1].Counts[fencedtype.JobState(state.String)] = n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list workflows: %w", err)
	}
	for _, w := range out {
		w.State = driver.WorkflowStateOf(w.Counts, w.CancelledAt != nil)
	}
	return out, nil
}

// taskDependenciesSQL reads the dependencies of task ?1 by name: each
// one's id, state, output once it succeeded, and last error.
const taskDependenciesSQL = `
SELECT d.task_name, d.id, d.state, CASE WHEN d.state = 'succeeded' THEN d.output END, COALESCE(d.last_error, '')
FROM fenced_job_deps e JOIN fenced_jobs d ON d.id = e.dep_id
WHERE e.job_id = ?1
ORDER BY d.task_name`

// TaskDependencies implements driver.WorkflowDriver: one statement.
func (d *Driver) TaskDependencies(ctx context.Context, id int64) ([]fencedtype.TaskDependency, error) {
	deps, err := sqldb.All(ctx, d.db, func(r sqldb.Scanner) (fencedtype.TaskDependency, error) {
		var t fencedtype.TaskDependency
		var state string
		err := r.Scan(&t.Name, &t.JobID, &state, (*[]byte)(&t.Output), &t.Error)
		t.State = fencedtype.JobState(state)
		return t, err
	}, taskDependenciesSQL, id)
	if err != nil {
		return nil, fmt.Errorf("task dependencies of job %d: %w", id, notMigrated(err))
	}
	return deps, nil
}
