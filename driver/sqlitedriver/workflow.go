package sqlitedriver

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

var _ driver.WorkflowDriver = (*Driver)(nil)

// insertTasksSQL inserts tasks of workflow ?1, as enqueueBulkSQL inserts
// jobs but with one clock reading per statement: ?2 is a JSON array with one
// element per task (taskArgs): [kind, queue, args (hex), priority, run_at_us
// or null, delay_us, max_attempts, concurrency key (empty for none),
// metadata (hex, or null), policy (hex, or null), tags (an array, or null),
// task name, its dependencies' number, run anyway]. A task with a
// dependency is pending, its edges all waiting (the caller resolves those
// on dependencies that finished already), one without queued. It returns
// each task's id and name.
const insertTasksSQL = `
INSERT INTO fenced_jobs (kind, queue, args, priority, run_at_us, max_attempts, concurrency_key, metadata,
    created_us, updated_us, policy, tags, state, workflow_id, task_name, deps_waiting, run_anyway)
SELECT value ->> 0, value ->> 1, CAST(unhex(value ->> 2) AS TEXT), value ->> 3,
    COALESCE(value ->> 4, ` + nowUS + ` + (value ->> 5)), value ->> 6, NULLIF(value ->> 7, ''),
    CAST(unhex(value ->> 8) AS TEXT), ` + nowUS + `, ` + nowUS + `,
    CAST(unhex(value ->> 9) AS TEXT), NULLIF(json(value -> 10), 'null'),
    CASE WHEN value ->> 12 > 0 THEN 'pending' ELSE 'queued' END, ?1, value ->> 11, value ->> 12, value ->> 13
FROM jsonb_each(?2)
ORDER BY key
RETURNING id, task_name`

// insertEdgesSQL inserts edges, all waiting: ?1 is a JSON array of
// [dependency's id, dependent's id].
const insertEdgesSQL = `INSERT INTO fenced_job_deps (dep_id, job_id)
SELECT value ->> 0, value ->> 1 FROM json_each(?1)`

// taskArgs is insertTasksSQL's ?2 for tasks.
func taskArgs(tasks []driver.WorkflowTaskParams) (string, error) {
	elems := make([][14]any, len(tasks))
	for i, t := range tasks {
		in := t.Job
		var runAt any // none: null, run after the delay
		if !in.RunAt.IsZero() {
			runAt = in.RunAt.UnixMicro()
		}
		var meta, policy any // none: null, stored as NULL
		if in.Metadata != nil {
			meta = hex.EncodeToString(in.Metadata)
		}
		if in.Policy != nil {
			policy = hex.EncodeToString(in.Policy)
		}
		elems[i] = [14]any{in.Kind, in.Queue, hex.EncodeToString(in.Args), in.Priority,
			runAt, in.Delay.Microseconds(), in.MaxAttempts, in.ConcurrencyKey, meta,
			policy, in.Tags, t.Name, len(t.DependsOn), t.RunAnyway}
	}
	b, err := json.Marshal(elems)
	return string(b), err
}

// insertTasks inserts tasks into workflow inside tx, in runs of about
// runBytes of args (bulkRunEnd), and then every edge of theirs, waiting.
// known maps the names of the workflow's tasks that are not among them to
// their ids; every dependency names one of the two.
func insertTasks(ctx context.Context, tx *sql.Tx, workflow int64, tasks []driver.WorkflowTaskParams, known map[string]int64) error {
	jobs := make([]driver.EnqueueParams, len(tasks))
	for i, t := range tasks {
		jobs[i] = t.Job
	}
	ids := make(map[string]int64, len(tasks)+len(known))
	for name, id := range known {
		ids[name] = id
	}
	for start := 0; start < len(tasks); {
		stop := bulkRunEnd(jobs, start)
		arg, err := taskArgs(tasks[start:stop])
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, insertTasksSQL, workflow, arg)
		if err != nil {
			return err
		}
		n := 0
		for rows.Next() {
			var id int64
			var name string
			if err := rows.Scan(&id, &name); err != nil {
				rows.Close()
				return err
			}
			ids[name] = id
			n++
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		if n != stop-start {
			return fmt.Errorf("inserted %d of %d tasks", n, stop-start)
		}
		start = stop
	}
	var edges [][2]int64
	for _, t := range tasks {
		for _, dep := range t.DependsOn {
			id, ok := ids[dep]
			if !ok {
				return fencedtype.Invalid("tasks", "task %q depends on %q, which is no task of workflow %d", t.Name, dep, workflow)
			}
			edges = append(edges, [2]int64{id, ids[t.Name]})
		}
	}
	for start := 0; start < len(edges); start += edgeRun {
		arg, err := json.Marshal(edges[start:min(start+edgeRun, len(edges))])
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, insertEdgesSQL, string(arg)); err != nil {
			return err
		}
	}
	return nil
}

// edgeRun bounds the edges of one insertEdgesSQL.
const edgeRun = 50000

// EnqueueWorkflow implements driver.WorkflowDriver: in one write
// transaction, or inside tx (whose write lock the caller holds), the
// workflow's row, its tasks and their edges, and the workflow read back.
func (d *Driver) EnqueueWorkflow(ctx context.Context, tx driver.Tx, w driver.WorkflowParams) (*fencedtype.Workflow, error) {
	var out *fencedtype.Workflow
	enqueue := func(tx *sql.Tx) error {
		var id int64
		err := tx.QueryRowContext(ctx, `INSERT INTO fenced_workflows (name, created_us) VALUES (?1, `+nowUS+`) RETURNING id`,
			w.Name).Scan(&id)
		if err != nil {
			return err
		}
		if err := insertTasks(ctx, tx, id, w.Tasks, nil); err != nil {
			return err
		}
		out, err = readWorkflow(ctx, tx, id)
		return err
	}
	if err := d.inTx(ctx, tx, enqueue); err != nil {
		return nil, fmt.Errorf("enqueue workflow: %w", notMigrated(err))
	}
	return out, nil
}

// inTx runs fn inside tx when it is non-nil (the caller holds its write
// lock), or else in a write transaction of its own.
func (d *Driver) inTx(ctx context.Context, tx driver.Tx, fn func(*sql.Tx) error) error {
	if tx == nil {
		return d.writeTx(ctx, fn)
	}
	stx, err := sqlOf(tx)
	if err != nil {
		return err
	}
	return fn(stx)
}

// existingTaskSQL reads the tasks of workflow ?1 named in ?2 (a JSON array):
// name, id and state.
const existingTaskSQL = `SELECT task_name, id, state FROM fenced_jobs
WHERE workflow_id = ?1 AND task_name IN (SELECT value FROM json_each(?2))`

// AddWorkflowTasks implements driver.WorkflowDriver. In one transaction
// (the caller's, or its own): the guard of ref (GuardJob, as JobTx checks
// it), the tasks of the workflow the new ones name read (SQLite's write
// lock, held since the transaction's first statement, keeps any of them
// from finishing meanwhile), the inserts, and the release rule for the
// dependencies that finished already: a new edge on a task that succeeded
// is done, one on a task that failed or was cancelled fails, and the rule
// runs on from there. A name that is no task of the workflow, or a new
// task's name that one has already, is refused with an *InvalidError
// before anything is written.
func (d *Driver) AddWorkflowTasks(ctx context.Context, tx driver.Tx, ref fencedtype.JobRef, tasks []driver.WorkflowTaskParams) (*fencedtype.Workflow, error) {
	var out *fencedtype.Workflow
	err := d.inTx(ctx, tx, func(tx *sql.Tx) (err error) {
		if err := d.GuardJob(ctx, tx, ref); err != nil {
			return err
		}
		out, err = addTasks(ctx, tx, ref, tasks)
		return err
	})
	if err != nil {
		if isDiagnosis(err) || errors.As(err, new(*fencedtype.InvalidError)) {
			return nil, err
		}
		return nil, fmt.Errorf("add tasks to the workflow of job %d: %w", ref.ID, notMigrated(err))
	}
	return out, nil
}

// addTasks is AddWorkflowTasks after the guard, in its transaction.
func addTasks(ctx context.Context, tx *sql.Tx, ref fencedtype.JobRef, tasks []driver.WorkflowTaskParams) (*fencedtype.Workflow, error) {
	var workflow int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(workflow_id, 0) FROM fenced_jobs WHERE id = ?1`, ref.ID).Scan(&workflow); err != nil {
		return nil, err
	}
	if workflow == 0 {
		return nil, fencedtype.Invalid("job", "job %d is no workflow's task: only a task adds tasks to its workflow", ref.ID)
	}
	ours := make(map[string]bool, len(tasks))
	names := make([]string, 0, len(tasks))
	for _, t := range tasks {
		ours[t.Name] = true
		names = append(names, t.Name)
	}
	var named []string // the existing tasks depended on
	for _, t := range tasks {
		for _, dep := range t.DependsOn {
			if !ours[dep] && !slices.Contains(named, dep) {
				named = append(named, dep)
			}
		}
	}
	taken, err := readTasks(ctx, tx, workflow, names)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if _, ok := taken[name]; ok {
			return nil, fencedtype.Invalid("task name", "workflow %d has a task %q already", workflow, name)
		}
	}
	existing, err := readTasks(ctx, tx, workflow, named)
	if err != nil {
		return nil, err
	}
	known := make(map[string]int64, len(existing))
	var failed, succeeded []int64
	for _, dep := range named {
		e, ok := existing[dep]
		if !ok {
			return nil, fencedtype.Invalid("tasks", "a task depends on %q, which is no task of workflow %d", dep, workflow)
		}
		known[dep] = e.id
		switch e.state {
		case fencedtype.JobSucceeded:
			succeeded = append(succeeded, e.id)
		case fencedtype.JobFailed, fencedtype.JobCancelled:
			failed = append(failed, e.id)
		}
	}
	if err := insertTasks(ctx, tx, workflow, tasks, known); err != nil {
		return nil, err
	}
	// The dependencies that finished already resolve their new edges (their
	// older ones are resolved, and stay so).
	slices.Sort(failed)
	slices.Sort(succeeded)
	if err := workflowStep(ctx, tx, failed, succeeded); err != nil {
		return nil, err
	}
	return readWorkflow(ctx, tx, workflow)
}

// existingTask is a task of a workflow as readTasks reads it.
type existingTask struct {
	id    int64
	state fencedtype.JobState
}

// readTasks reads the tasks of workflow named in names, by name.
func readTasks(ctx context.Context, tx *sql.Tx, workflow int64, names []string) (map[string]existingTask, error) {
	out := map[string]existingTask{}
	if len(names) == 0 {
		return out, nil
	}
	arg, err := json.Marshal(names)
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, existingTaskSQL, workflow, string(arg))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var name, state string
		var t existingTask
		if err := rows.Scan(&name, &t.id, &state); err != nil {
			return nil, err
		}
		t.state = fencedtype.JobState(state)
		out[name] = t
	}
	return out, rows.Err()
}
