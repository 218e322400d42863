package pgdriver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/reads"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var _ driver.WorkflowDriver = (*Driver)(nil)

// insertTasksSQL inserts tasks of workflow w (the %s: a CTE of one row, the
// workflow's id, a new workflow's inserted there or an existing one's) in
// one statement. Their ids are drawn first, so that each row is written
// with its edges: its dependencies (ids of tasks of this statement, by
// position, $16 and $17, or of existing ones, $18) and its dependents among
// these tasks. Each task comes with its state and counters, which the
// caller computed ($13 to $15, $19, $20). Tasks never enter a lane (seq
// NULL): they wait in claim order, as keyed jobs do (docs/design.md §6.17).
// It returns the workflow's id and the new tasks' ids by position.
const insertTasksSQL = `
WITH %s, ids AS (
    SELECT o AS ord, nextval(pg_get_serial_sequence('fenced_jobs', 'id')) AS id
    FROM generate_series(1, cardinality($2::text[])) AS o
), deps AS (
    SELECT x.task, array_agg(COALESCE(i.id, x.dep_id) ORDER BY x.k) AS ids
    FROM unnest($16::int[], $17::int[], $18::bigint[]) WITH ORDINALITY AS x(task, dep, dep_id, k)
    LEFT JOIN ids i ON i.ord = x.dep
    GROUP BY x.task
), dts AS (
    SELECT x.dep, array_agg(i.id ORDER BY i.id) AS ids
    FROM unnest($16::int[], $17::int[]) AS x(task, dep)
    JOIN ids i ON i.ord = x.task
    WHERE x.dep > 0
    GROUP BY x.dep
), t AS (
    INSERT INTO fenced_jobs AS j (id, kind, queue, args, priority, run_at, max_attempts, concurrency_key, metadata,
        created_at, updated_at, policy, tags, state, workflow_id, task_name, dependencies, dependents,
        deps_waiting, deps_failed, run_anyway, workflow_cancelled, finished_at, last_error)
    OVERRIDING SYSTEM VALUE
    SELECT ids.id, i.kind, i.queue, i.args, i.priority,
        COALESCE(i.run_at, clock_timestamp() + i.delay_us * interval '1 microsecond'),
        i.max_attempts, NULLIF(i.ckey, ''), i.meta, clock_timestamp(), clock_timestamp(), i.policy, i.tags::text[],
        i.state, w.id, i.name, deps.ids, dts.ids, i.waiting, i.failed, i.anyway, i.state = 'cancelled',
        CASE WHEN i.state = 'cancelled' THEN clock_timestamp() END,
        CASE WHEN i.state = 'cancelled' THEN '` + driver.TaskCancelError + `' END
    FROM w, unnest($2::text[], $3::text[], $4::jsonb[], $5::int[], $6::timestamptz[], $7::bigint[], $8::int[],
            $9::text[], $10::jsonb[], $11::jsonb[], $12::text[], $13::text[], $14::int[], $15::bool[],
            $19::int[], $20::text[])
        WITH ORDINALITY AS i(kind, queue, args, priority, run_at, delay_us, max_attempts, ckey, meta, policy, tags,
            name, waiting, anyway, failed, state, ord)
    JOIN ids ON ids.ord = i.ord
    LEFT JOIN deps ON deps.task = i.ord
    LEFT JOIN dts ON dts.dep = i.ord
    ORDER BY i.ord
    RETURNING j.id
)
SELECT (SELECT id FROM w), ARRAY(SELECT id FROM ids ORDER BY ord), (SELECT count(*) FROM t)`

var (
	// enqueueWorkflowSQL inserts a workflow ($1: its name) with its tasks.
	enqueueWorkflowSQL = fmt.Sprintf(insertTasksSQL,
		`w AS (INSERT INTO fenced_workflows (name, created_at) VALUES ($1, clock_timestamp()) RETURNING id)`)
	// addTasksSQL inserts tasks into workflow $1.
	addTasksSQL = fmt.Sprintf(insertTasksSQL, `w AS (SELECT $1::bigint AS id)`)
)

// taskStart is how an inserted task starts: its state and counters.
type taskStart struct {
	state           fencedtype.JobState
	waiting, failed int
}

// startTasks decides how each task starts from its dependencies: a new
// task or an existing one that has not finished waits; an existing one
// failed or cancelled (existing[name] false) has failed, as has a new one
// that starts cancelled (a failed dependency and not running anyway, as
// the rule would have cancelled it). done names the existing dependencies
// that succeeded. The tasks form a DAG among themselves (validated).
func startTasks(tasks []driver.WorkflowTaskParams, existing map[string]fencedtype.JobState) []taskStart {
	index := make(map[string]int, len(tasks))
	for i, t := range tasks {
		index[t.Name] = i
	}
	out := make([]taskStart, len(tasks))
	decided := make([]bool, len(tasks))
	var decide func(i int)
	decide = func(i int) {
		if decided[i] {
			return
		}
		decided[i] = true
		s := &out[i]
		for _, dep := range tasks[i].DependsOn {
			if j, ok := index[dep]; ok {
				decide(j)
				if out[j].state == fencedtype.JobCancelled {
					s.failed++
				} else {
					s.waiting++
				}
				continue
			}
			switch existing[dep] {
			case fencedtype.JobSucceeded:
			case fencedtype.JobFailed, fencedtype.JobCancelled:
				s.failed++
			default:
				s.waiting++
			}
		}
		switch {
		case s.failed > 0 && !tasks[i].RunAnyway:
			s.state = fencedtype.JobCancelled
		case s.waiting > 0:
			s.state = fencedtype.JobPending
		default:
			s.state = fencedtype.JobQueued
		}
	}
	for i := range tasks {
		decide(i)
	}
	return out
}

// taskArgs are insertTasksSQL's arguments $2 to $20 for tasks; existing
// maps the name of each task of the workflow they depend on that is not
// among them to its id.
func taskArgs(tasks []driver.WorkflowTaskParams, starts []taskStart, existing map[string]int64) []any {
	n := len(tasks)
	jobs := make([]driver.EnqueueParams, n)
	names, waiting, failed := make([]string, n), make([]int32, n), make([]int32, n)
	anyway, states := make([]bool, n), make([]string, n)
	index := make(map[string]int32, n)
	for i, t := range tasks {
		index[t.Name] = int32(i + 1)
	}
	var edgeTask, edgeDep []int32
	var edgeID []int64
	for i, t := range tasks {
		jobs[i] = t.Job
		names[i], anyway[i] = t.Name, t.RunAnyway
		waiting[i], failed[i], states[i] = int32(starts[i].waiting), int32(starts[i].failed), string(starts[i].state)
		for _, dep := range t.DependsOn {
			edgeTask, edgeDep, edgeID = append(edgeTask, int32(i+1)), append(edgeDep, index[dep]), append(edgeID, existing[dep])
		}
	}
	a, _ := enqueueArgs(jobs)
	// enqueueArgs: kinds, queues, args, priorities, run_ats, delays, maxes,
	// idempotency keys, concurrency keys, sequence keys, continues,
	// metadata, policies, tags. Tasks have no idempotency or sequence keys.
	return []any{a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[8], a[11], a[12], a[13],
		names, waiting, anyway, edgeTask, edgeDep, edgeID, failed, states}
}

// insertTasks runs statement (enqueueWorkflowSQL or addTasksSQL) with its
// first argument first, and returns the workflow's id and the new tasks'
// ids by position.
func insertTasks(ctx context.Context, q querier, statement string, first any, tasks []driver.WorkflowTaskParams,
	starts []taskStart, existing map[string]int64) (int64, []int64, error) {
	var id, n int64
	var ids []int64
	args := append([]any{first}, taskArgs(tasks, starts, existing)...)
	if err := q.QueryRow(ctx, statement, args...).Scan(&id, &ids, &n); err != nil {
		return 0, nil, err
	}
	if n != int64(len(tasks)) || len(ids) != len(tasks) {
		return 0, nil, fmt.Errorf("%d of %d tasks were written", n, len(tasks))
	}
	return id, ids, nil
}

// EnqueueWorkflow implements driver.WorkflowDriver: one statement
// (insertTasksSQL) and the read of what it wrote, inside tx when it is
// non-nil, else in a transaction of their own (so that an error before the
// commit means nothing was written).
func (d *Driver) EnqueueWorkflow(ctx context.Context, tx driver.Tx, w driver.WorkflowParams) (*fencedtype.Workflow, error) {
	var out *fencedtype.Workflow
	enqueue := func(q querier) error {
		id, _, err := insertTasks(ctx, q, enqueueWorkflowSQL, w.Name, w.Tasks, startTasks(w.Tasks, nil), nil)
		if err != nil {
			return fmt.Errorf("enqueue workflow: %w", notMigrated(err))
		}
		out, err = readWorkflow(ctx, q, id)
		return err
	}
	if tx == nil {
		if err := d.pool.inTx(ctx, func(t pgx.Tx) error { return enqueue(t) }); err != nil {
			return nil, err
		}
		return out, nil
	}
	ptx, err := pgxOf(tx)
	if err != nil {
		return nil, err
	}
	if err := enqueue(ptx); err != nil {
		return nil, err
	}
	return out, nil
}

// AddWorkflowTasks implements driver.WorkflowDriver. In one transaction
// (the caller's, or its own): the guard of ref (guardJob: the row
// share-locked), the existing dependencies named, locked (FOR NO KEY
// UPDATE, in id order) and read, the inserts, and the new tasks' ids
// appended to those dependencies' dependents. A dependency locked so cannot
// finish until the transaction ends; the statement that ends it then locks
// and updates its newest row, and releases from that row's dependents.
func (d *Driver) AddWorkflowTasks(ctx context.Context, tx driver.Tx, ref fencedtype.JobRef, tasks []driver.WorkflowTaskParams) (*fencedtype.Workflow, error) {
	var out *fencedtype.Workflow
	add := func(ptx pgx.Tx) (err error) {
		if err := guardJob(ctx, ptx, ref); err != nil {
			return err
		}
		out, err = addTasks(ctx, ptx, ref, tasks)
		return err
	}
	var err error
	if tx != nil {
		ptx, perr := pgxOf(tx)
		if perr != nil {
			return nil, perr
		}
		err = add(ptx)
	} else {
		err = d.pool.inTx(ctx, add)
	}
	if errors.Is(err, errGuardFailed) {
		return nil, d.diagnoseJob(ctx, ref)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// addTasks is AddWorkflowTasks after the guard, in its transaction.
func addTasks(ctx context.Context, tx pgx.Tx, ref fencedtype.JobRef, tasks []driver.WorkflowTaskParams) (*fencedtype.Workflow, error) {
	var workflow int64
	if err := tx.QueryRow(ctx, `SELECT COALESCE(workflow_id, 0) FROM fenced_jobs WHERE id = $1`, ref.ID).Scan(&workflow); err != nil {
		return nil, fmt.Errorf("add workflow tasks: %w", err)
	}
	if workflow == 0 {
		return nil, fencedtype.Invalid("job", "job %d is no workflow's task: only a task adds tasks to its workflow", ref.ID)
	}
	ours := make(map[string]bool, len(tasks))
	for _, t := range tasks {
		ours[t.Name] = true
	}
	var named []string
	for _, t := range tasks {
		for _, dep := range t.DependsOn {
			if !ours[dep] && !slices.Contains(named, dep) {
				named = append(named, dep)
			}
		}
	}
	ids := make(map[string]int64, len(named))
	states := make(map[string]fencedtype.JobState, len(named))
	rows, err := tx.Query(ctx, `SELECT task_name, id, state FROM fenced_jobs
		WHERE workflow_id = $1 AND task_name = ANY($2::text[]) ORDER BY id FOR NO KEY UPDATE`, workflow, named)
	if err != nil {
		return nil, fmt.Errorf("add workflow tasks: %w", err)
	}
	var name, state string
	var id int64
	_, err = pgx.ForEachRow(rows, []any{&name, &id, &state}, func() error {
		ids[name], states[name] = id, fencedtype.JobState(state)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("add workflow tasks: %w", err)
	}
	for _, dep := range named {
		if _, ok := ids[dep]; !ok {
			return nil, fencedtype.Invalid("tasks", "a task depends on %q, which is no task of workflow %d", dep, workflow)
		}
	}
	_, added, err := insertTasks(ctx, tx, addTasksSQL, workflow, tasks, startTasks(tasks, states), ids)
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "fenced_jobs_task" {
			return nil, fencedtype.Invalid("task name", "a task of workflow %d has one of these names already", workflow)
		}
		return nil, fmt.Errorf("add workflow tasks: %w", err)
	}
	// The existing dependencies learn their new dependents.
	var deps, dependents []int64
	for i, t := range tasks {
		for _, dep := range t.DependsOn {
			if !ours[dep] {
				deps, dependents = append(deps, ids[dep]), append(dependents, added[i])
			}
		}
	}
	if len(deps) > 0 {
		if _, err := tx.Exec(ctx, `
UPDATE fenced_jobs d SET dependents = COALESCE(d.dependents, '{}') || x.ids
FROM (SELECT dep, array_agg(id ORDER BY id) AS ids FROM unnest($1::bigint[], $2::bigint[]) AS u(dep, id) GROUP BY dep) x
WHERE d.id = x.dep`, deps, dependents); err != nil {
			return nil, fmt.Errorf("add workflow tasks: %w", err)
		}
	}
	return readWorkflow(ctx, tx, workflow)
}

// GetWorkflow implements driver.WorkflowDriver.
func (d *Driver) GetWorkflow(ctx context.Context, id int64) (*fencedtype.Workflow, error) {
	return readWorkflow(ctx, d.pool, id)
}

// readWorkflow reads workflow id with its tasks, by id, and their
// dependencies' names (two statements; inside a transaction when q is one).
func readWorkflow(ctx context.Context, q querier, id int64) (*fencedtype.Workflow, error) {
	w := &fencedtype.Workflow{ID: id, Counts: map[fencedtype.JobState]int{}}
	err := q.QueryRow(ctx, `SELECT name, created_at, cancelled_at FROM fenced_workflows WHERE id = $1`, id).
		Scan(&w.Name, &w.CreatedAt, &w.CancelledAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fencedtype.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get workflow %d: %w", id, err)
	}
	rows, err := q.Query(ctx, `
SELECT j.task_name, j.id, j.kind, j.queue, j.state, j.run_anyway, j.workflow_cancelled,
    ARRAY(SELECT d.task_name FROM fenced_jobs d WHERE d.id = ANY (j.dependencies) ORDER BY d.task_name)
FROM fenced_jobs j
WHERE j.workflow_id = $1
ORDER BY j.id`, id)
	if err != nil {
		return nil, fmt.Errorf("get workflow %d tasks: %w", id, err)
	}
	var t fencedtype.WorkflowTask
	var state string
	_, err = pgx.ForEachRow(rows, []any{&t.Name, &t.JobID, &t.Kind, &t.Queue, &state, &t.RunAnyway, &t.CancelledByWorkflow, &t.DependsOn},
		func() error {
			t.State = fencedtype.JobState(state)
			w.Tasks = append(w.Tasks, t)
			w.Counts[t.State]++
			t.DependsOn = nil
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("get workflow %d tasks: %w", id, err)
	}
	w.State = driver.WorkflowStateOf(w.Counts, w.CancelledAt != nil)
	return w, nil
}

// ListWorkflows implements driver.WorkflowDriver: one statement, the page
// of workflows by id and each one's counts by state (an index range of
// fenced_jobs_task per workflow).
func (d *Driver) ListWorkflows(ctx context.Context, f fencedtype.WorkflowFilter) ([]*fencedtype.Workflow, error) {
	order := "ASC"
	if f.Desc {
		order = "DESC"
	}
	rows, err := d.pool.Query(ctx, fmt.Sprintf(`
SELECT w.id, w.name, w.created_at, w.cancelled_at, c.state, COALESCE(c.n, 0)
FROM (SELECT * FROM fenced_workflows
      WHERE id > $1 AND id < $2 AND ($3 = '' OR name = $3)
      ORDER BY id %[1]s LIMIT $4) w
LEFT JOIN LATERAL (SELECT state, count(*) AS n FROM fenced_jobs j WHERE j.workflow_id = w.id GROUP BY state) c ON true
ORDER BY w.id %[1]s`, order), f.AfterID, reads.BeforeBound(f.BeforeID), f.Name, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("list workflows: %w", err)
	}
	var out []*fencedtype.Workflow
	var id int64
	var name string
	var created time.Time
	var cancelled *time.Time
	var state *string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&id, &name, &created, &cancelled, &state, &n}, func() error {
		if len(out) == 0 || out[len(out)-1].ID != id {
			out = append(out, &fencedtype.Workflow{ID: id, Name: name, CreatedAt: created, CancelledAt: cancelled,
				Counts: map[fencedtype.JobState]int{}})
		}
		if state != nil {
			out[len(out)-1].Counts[fencedtype.JobState(*state)] = n
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list workflows: %w", err)
	}
	for _, w := range out {
		w.State = driver.WorkflowStateOf(w.Counts, w.CancelledAt != nil)
	}
	return out, nil
}

// cancelTasksSQL cancels workflow $1's pending and queued tasks and asks
// its running ones to stop, as cancelJobSQL does one job; their dependents
// follow by the rule (the trigger).
const cancelTasksSQL = `
UPDATE fenced_jobs j SET ` + cancelJobSet + `
WHERE j.workflow_id = $1 AND j.state IN ('pending', 'queued', 'running')`

// CancelWorkflow implements driver.WorkflowDriver.
func (d *Driver) CancelWorkflow(ctx context.Context, id int64) (*fencedtype.Workflow, error) {
	err := retryDeadlock(ctx, func() error {
		return d.pool.inTx(ctx, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `UPDATE fenced_workflows SET cancelled_at = COALESCE(cancelled_at, clock_timestamp()) WHERE id = $1`, id)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return fencedtype.ErrNotFound
			}
			_, err = tx.Exec(ctx, cancelTasksSQL, id)
			return err
		})
	})
	if err != nil {
		if errors.Is(err, fencedtype.ErrNotFound) {
			return nil, err
		}
		return nil, fmt.Errorf("cancel workflow %d: %w", id, err)
	}
	return d.GetWorkflow(ctx, id)
}

// retryTasksSQL retries workflow $1's failed tasks and the cancelled ones
// its workflow did not cancel, as retryJobSQL does one job; their
// dependents wait for them again by the rule (the trigger). A task whose
// dependency it retries becomes runnable only after this statement, so
// RetryWorkflow runs it until it retries nothing.
const retryTasksSQL = `
UPDATE fenced_jobs j SET ` + retryJobSet + `
WHERE j.workflow_id = $1 AND j.state IN ('failed', 'cancelled') AND ` + taskRunnable

// RetryWorkflow implements driver.WorkflowDriver.
func (d *Driver) RetryWorkflow(ctx context.Context, id int64) (*fencedtype.Workflow, error) {
	err := retryDeadlock(ctx, func() error {
		return d.pool.inTx(ctx, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `UPDATE fenced_workflows SET cancelled_at = NULL WHERE id = $1`, id)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return fencedtype.ErrNotFound
			}
			for {
				tag, err := tx.Exec(ctx, retryTasksSQL, id)
				if err != nil || tag.RowsAffected() == 0 {
					return err
				}
			}
		})
	})
	if err != nil {
		if errors.Is(err, fencedtype.ErrNotFound) {
			return nil, err
		}
		return nil, fmt.Errorf("retry workflow %d: %w", id, err)
	}
	return d.GetWorkflow(ctx, id)
}

// deleteWorkflowsSQL deletes the workflows $1 names, whole: their tasks
// (the history goes with them, by its trigger) and the workflows' rows, in
// one statement. It returns how many tasks it deleted.
const deleteWorkflowsSQL = `
WITH dj AS (
    DELETE FROM fenced_jobs j WHERE j.workflow_id = ANY ($1::bigint[]) RETURNING j.id
), dw AS (
    DELETE FROM fenced_workflows w WHERE w.id = ANY ($1::bigint[])
)
SELECT count(*) FROM dj`

// DeleteWorkflow implements driver.WorkflowDriver.
func (d *Driver) DeleteWorkflow(ctx context.Context, id int64) error {
	return d.pool.inTx(ctx, func(tx pgx.Tx) error {
		var found bool
		err := tx.QueryRow(ctx, `SELECT true FROM fenced_workflows WHERE id = $1 FOR UPDATE`, id).Scan(&found)
		if errors.Is(err, pgx.ErrNoRows) {
			return fencedtype.ErrNotFound
		}
		if err == nil {
			_, err = tx.Exec(ctx, deleteWorkflowsSQL, []int64{id})
		}
		if err != nil {
			return fmt.Errorf("delete workflow %d: %w", id, err)
		}
		return nil
	})
}

// TaskDependencies implements driver.WorkflowDriver.
func (d *Driver) TaskDependencies(ctx context.Context, id int64) ([]fencedtype.TaskDependency, error) {
	rows, err := d.pool.Query(ctx, `
SELECT d.task_name, d.id, d.state, d.output, COALESCE(d.last_error, '')
FROM fenced_jobs d
WHERE d.id = ANY ((SELECT j.dependencies FROM fenced_jobs j WHERE j.id = $1)::bigint[])
ORDER BY d.task_name`, id)
	if err != nil {
		return nil, fmt.Errorf("task dependencies of job %d: %w", id, err)
	}
	var out []fencedtype.TaskDependency
	var t fencedtype.TaskDependency
	var state string
	_, err = pgx.ForEachRow(rows, []any{&t.Name, &t.JobID, &state, (*[]byte)(&t.Output), &t.Error}, func() error {
		t.State = fencedtype.JobState(state)
		out = append(out, t)
		t.Output = nil
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("task dependencies of job %d: %w", id, err)
	}
	return out, nil
}
