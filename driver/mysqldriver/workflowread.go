package mysqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// readOnlySnapshot is the transaction of a read of several statements: one
// snapshot (REPEATABLE READ's consistent read), so a workflow, its tasks and
// its edges agree with each other.
var readOnlySnapshot = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}

const (
	workflowSQL = `SELECT id, name, created_at, cancelled_at FROM fenced_workflows WHERE id = ?`
	// workflowTasksSQL reads a workflow's tasks by id. Parameter: its id.
	workflowTasksSQL = `SELECT id, task_name, kind, queue, state, run_anyway, workflow_cancelled
FROM fenced_jobs FORCE INDEX (fenced_jobs_task) WHERE workflow_id = ? ORDER BY id`
	// workflowEdgesSQL reads the edges of a workflow's tasks. Parameter:
	// its id.
	workflowEdgesSQL = `SELECT d.job_id, d.dep_id FROM fenced_jobs j FORCE INDEX (fenced_jobs_task)
JOIN fenced_job_deps d FORCE INDEX (fenced_job_deps_job) ON d.job_id = j.id WHERE j.workflow_id = ?`
)

// scanWorkflow scans workflowSQL's columns.
func scanWorkflow(r sqldb.Scanner) (*fencedtype.Workflow, error) {
	var w fencedtype.Workflow
	var name []byte
	var created, cancelled dbTime
	if err := r.Scan(&w.ID, &name, &created, &cancelled); err != nil {
		return nil, err
	}
	w.Name, w.CreatedAt, w.CancelledAt = string(name), created.Time, cancelled.ptr()
	w.Counts = map[fencedtype.JobState]int{}
	return &w, nil
}

// getWorkflow reads workflow id with its tasks through q; ErrNotFound when
// there is none.
func getWorkflow(ctx context.Context, q sqldb.Querier, id int64) (*fencedtype.Workflow, error) {
	w, err := sqldb.One(ctx, q, scanWorkflow, workflowSQL, id)
	if err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, workflowTasksSQL, id)
	if err != nil {
		return nil, err
	}
	at := map[int64]int{}
	for rows.Next() {
		var t fencedtype.WorkflowTask
		var name, kind, queue []byte
		var state string
		if err := rows.Scan(&t.JobID, &name, &kind, &queue, &state, &t.RunAnyway, &t.CancelledByWorkflow); err != nil {
			rows.Close()
			return nil, err
		}
		t.Name, t.Kind, t.Queue, t.State = string(name), string(kind), string(queue), fencedtype.JobState(state)
		t.DependsOn = []string{}
		at[t.JobID] = len(w.Tasks)
		w.Tasks = append(w.Tasks, t)
		w.Counts[t.State]++
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = q.QueryContext(ctx, workflowEdgesSQL, id)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var job, dep int64
		if err := rows.Scan(&job, &dep); err != nil {
			rows.Close()
			return nil, err
		}
		i, ok1 := at[job]
		k, ok2 := at[dep]
		if ok1 && ok2 {
			w.Tasks[i].DependsOn = append(w.Tasks[i].DependsOn, w.Tasks[k].Name)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range w.Tasks {
		slices.Sort(w.Tasks[i].DependsOn)
	}
	w.State = driver.WorkflowStateOf(w.Counts, w.CancelledAt != nil)
	return w, nil
}

// GetWorkflow implements driver.WorkflowDriver: one read-only snapshot.
func (d *Driver) GetWorkflow(ctx context.Context, id int64) (*fencedtype.Workflow, error) {
	var w *fencedtype.Workflow
	err := d.inTxOpts(ctx, readOnlySnapshot, func(tx *sql.Tx) (err error) {
		w, err = getWorkflow(ctx, tx, id)
		return err
	})
	if errors.Is(err, fencedtype.ErrNotFound) {
		return nil, fencedtype.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get workflow %d: %w", id, err)
	}
	return w, nil
}

// workflowCountsSQL counts the tasks of workflows by state, through the
// (workflow_id, task_name) key. %s are the ids.
const workflowCountsSQL = `SELECT workflow_id, state, COUNT(*) FROM fenced_jobs FORCE INDEX (fenced_jobs_task)
WHERE workflow_id IN (%s) GROUP BY workflow_id, state`

// ListWorkflows implements driver.WorkflowDriver: the workflows by id
// within the filter's bounds, then their counts, in one read-only
// snapshot.
func (d *Driver) ListWorkflows(ctx context.Context, f fencedtype.WorkflowFilter) ([]*fencedtype.Workflow, error) {
	where, args := []string{"id > ?"}, []any{f.AfterID}
	if f.BeforeID > 0 {
		where, args = append(where, "id < ?"), append(args, f.BeforeID)
	}
	if f.Name != "" {
		where, args = append(where, "name = ?"), append(args, []byte(f.Name))
	}
	order := ""
	if f.Desc {
		order = " DESC"
	}
	query := `SELECT id, name, created_at, cancelled_at FROM fenced_workflows WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY id` + order + ` LIMIT ?`
	var out []*fencedtype.Workflow
	err := d.inTxOpts(ctx, readOnlySnapshot, func(tx *sql.Tx) error {
		ws, err := sqldb.All(ctx, tx, scanWorkflow, query, append(args, f.Limit)...)
		if err != nil {
			return err
		}
		out = ws
		if len(ws) == 0 {
			return nil
		}
		byID := make(map[int64]*fencedtype.Workflow, len(ws))
		ids := make([]int64, len(ws))
		for i, w := range ws {
			byID[w.ID], ids[i] = w, w.ID
		}
		rows, err := tx.QueryContext(ctx, fmt.Sprintf(workflowCountsSQL, idList(ids)))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var state string
			var n int
			if err := rows.Scan(&id, &state, &n); err != nil {
				return err
			}
			byID[id].Counts[fencedtype.JobState(state)] = n
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list workflows: %w", notMigrated(err))
	}
	for _, w := range out {
		w.State = driver.WorkflowStateOf(w.Counts, w.CancelledAt != nil)
	}
	return out, nil
}

// taskDependenciesSQL reads a task's dependencies by name. Parameter: the
// task's job id.
const taskDependenciesSQL = `SELECT t.task_name, t.id, t.state, t.output, COALESCE(t.last_error, '')
FROM fenced_job_deps d FORCE INDEX (fenced_job_deps_job) JOIN fenced_jobs t ON t.id = d.dep_id
WHERE d.job_id = ? ORDER BY t.task_name`

// TaskDependencies implements driver.WorkflowDriver: one statement.
func (d *Driver) TaskDependencies(ctx context.Context, id int64) ([]fencedtype.TaskDependency, error) {
	deps, err := sqldb.All(ctx, d.db, func(r sqldb.Scanner) (fencedtype.TaskDependency, error) {
		var t fencedtype.TaskDependency
		var name, output []byte
		var state string
		if err := r.Scan(&name, &t.JobID, &state, &output, &t.Error); err != nil {
			return t, err
		}
		t.Name, t.State = string(name), fencedtype.JobState(state)
		if t.State == fencedtype.JobSucceeded && output != nil {
			t.Output = output
		}
		return t, nil
	}, taskDependenciesSQL, id)
	if err != nil {
		return nil, fmt.Errorf("dependencies of job %d: %w", id, notMigrated(err))
	}
	return deps, nil
}
