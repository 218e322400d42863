package fenced

import (
	"context"
	"fmt"
	"slices"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// MaxWorkflowTasks bounds the tasks of one EnqueueWorkflow or
// AddWorkflowTasks call.
const MaxWorkflowTasks = 10000

// Workflow is a workflow as read: its derived state, its tasks' counts by
// state and, from Workflow (not ListWorkflows), its tasks
// (docs/design.md §6.18).
type Workflow = fencedtype.Workflow

// WorkflowTask is one task of a workflow as read with it.
type WorkflowTask = fencedtype.WorkflowTask

// WorkflowState is a workflow's state, derived from its tasks'.
type WorkflowState = fencedtype.WorkflowState

// WorkflowFilter selects the workflows ListWorkflows lists.
type WorkflowFilter = fencedtype.WorkflowFilter

// TaskDependency is one dependency of a task as its handler reads it.
type TaskDependency = fencedtype.TaskDependency

// The states of a workflow.
const (
	WorkflowRunning   = fencedtype.WorkflowRunning
	WorkflowSucceeded = fencedtype.WorkflowSucceeded
	WorkflowFailed    = fencedtype.WorkflowFailed
	WorkflowCancelled = fencedtype.WorkflowCancelled
)

// WorkflowParams are a workflow to enqueue: a name (1–200 bytes; names
// need not be unique) and its tasks.
type WorkflowParams struct {
	Name  string
	Tasks []WorkflowTaskParams
}

// WorkflowTaskParams are one task of a workflow: its name within the
// workflow (1–200 bytes, distinct), its job (validated as Enqueue
// validates one; no SequenceKey, IdempotencyKey or Unique), the names of
// the tasks it runs after, and whether it runs once they finished even if
// some failed or were cancelled (RunAnyway; by default such a task is
// cancelled with them).
type WorkflowTaskParams struct {
	Name      string
	Job       EnqueueParams
	DependsOn []string
	RunAnyway bool
}

// EnqueueWorkflow writes a workflow and its tasks in one transaction, or
// inside tx when it is non-nil: a task with dependencies is pending until
// they finish (docs/design.md §6.18), one without is queued. The tasks
// must form a DAG over their own names; anything invalid is refused with an
// *InvalidError and nothing is written. It returns the workflow as read
// with its tasks.
func (c *Client) EnqueueWorkflow(ctx context.Context, tx Tx, w WorkflowParams) (*Workflow, error) {
	if err := validName("workflow name", w.Name); err != nil {
		return nil, err
	}
	tasks, err := validateTasks(w.Tasks, nil)
	if err != nil {
		return nil, err
	}
	wd, err := c.workflowDriver()
	if err != nil {
		return nil, err
	}
	out, err := wd.EnqueueWorkflow(ctx, tx, driver.WorkflowParams{Name: w.Name, Tasks: tasks})
	if err == nil && tx == nil {
		c.wakeTasks(out)
	}
	return out, err
}

// AddWorkflowTasks adds tasks to the workflow of ref's job, a task running
// its attempt ref: a fenced write, checked as JobTx checks ref, inside tx
// when it is non-nil (a JobTx of ref: the tasks then commit with the rest of
// it, its completion included). The new tasks may depend on each other and
// on any task of the workflow by name. A stale attempt adds nothing and gets
// its *StaleError (or ErrNotFound).
func (c *Client) AddWorkflowTasks(ctx context.Context, tx Tx, ref JobRef, tasks []WorkflowTaskParams) (*Workflow, error) {
	if err := validFence(ref.Fence); err != nil {
		return nil, err
	}
	in, err := validateTasks(tasks, func(string) bool { return true })
	if err != nil {
		return nil, err
	}
	wd, err := c.workflowDriver()
	if err != nil {
		return nil, err
	}
	out, err := wd.AddWorkflowTasks(ctx, tx, ref, in)
	if err == nil && tx == nil {
		c.wakeTasks(out)
	}
	return out, err
}

// GetWorkflow reads one workflow with its tasks; ErrNotFound when there is
// none.
func (c *Client) GetWorkflow(ctx context.Context, id int64) (*Workflow, error) {
	wd, err := c.workflowDriver()
	if err != nil {
		return nil, err
	}
	return wd.GetWorkflow(ctx, id)
}

// ListWorkflows lists workflows by id with their tasks' counts (Limit
// default 100, at most 1,000).
func (c *Client) ListWorkflows(ctx context.Context, f WorkflowFilter) ([]*Workflow, error) {
	if f.Name != "" {
		if err := validName("workflow name", f.Name); err != nil {
			return nil, err
		}
	}
	switch {
	case f.Limit == 0:
		f.Limit = 100
	case f.Limit < 0 || f.Limit > 1000:
		return nil, fencedtype.Invalid("limit", "%d is outside 1 to 1000", f.Limit)
	}
	if f.AfterID < 0 || f.BeforeID < 0 {
		return nil, fencedtype.Invalid("after/before", "ids are positive")
	}
	wd, err := c.workflowDriver()
	if err != nil {
		return nil, err
	}
	return wd.ListWorkflows(ctx, f)
}

// CancelWorkflow cancels a workflow: its pending and queued tasks are
// cancelled at once and its running ones asked to stop (their workers end
// them cancelled). ErrNotFound when there is none.
func (c *Client) CancelWorkflow(ctx context.Context, id int64) (*Workflow, error) {
	wd, err := c.workflowDriver()
	if err != nil {
		return nil, err
	}
	return wd.CancelWorkflow(ctx, id)
}

// RetryWorkflow resumes a workflow: every failed task, and every cancelled
// one its workflow did not cancel, is queued again, and their dependents
// wait for them again. ErrNotFound when there is none.
func (c *Client) RetryWorkflow(ctx context.Context, id int64) (*Workflow, error) {
	wd, err := c.workflowDriver()
	if err != nil {
		return nil, err
	}
	out, err := wd.RetryWorkflow(ctx, id)
	if err == nil {
		c.wakeTasks(out)
	}
	return out, err
}

// TaskDependencies reads the dependencies of the task job id, by name: each
// one's state, and its output once it succeeded. A handler of a task reads
// its inputs so. Nil for a job that is no task or has no dependency.
func (c *Client) TaskDependencies(ctx context.Context, id int64) ([]TaskDependency, error) {
	wd, err := c.workflowDriver()
	if err != nil {
		return nil, err
	}
	return wd.TaskDependencies(ctx, id)
}

// wakeTasks wakes this Client's idle workers of the queues of w's queued
// tasks.
func (c *Client) wakeTasks(w *Workflow) {
	if w == nil {
		return
	}
	for _, t := range w.Tasks {
		if t.State == JobQueued {
			c.waker.wake(t.Queue)
		}
	}
}

// validateTasks checks tasks and turns them into the driver's: distinct
// valid names, valid jobs without sequence, idempotency or unique options,
// distinct dependencies each naming a task of the call or (known non-nil
// and true for it) one of the workflow, and no cycle among them.
func validateTasks(tasks []WorkflowTaskParams, known func(string) bool) ([]driver.WorkflowTaskParams, error) {
	switch {
	case len(tasks) == 0:
		return nil, fencedtype.Invalid("tasks", "a workflow needs at least one task")
	case len(tasks) > MaxWorkflowTasks:
		return nil, fencedtype.Invalid("tasks", "%d tasks, the limit is %d", len(tasks), MaxWorkflowTasks)
	}
	index := make(map[string]int, len(tasks))
	for i, t := range tasks {
		if err := validName("task name", t.Name); err != nil {
			return nil, err
		}
		if _, dup := index[t.Name]; dup {
			return nil, fencedtype.Invalid("task name", "%q is given twice", t.Name)
		}
		index[t.Name] = i
	}
	out := make([]driver.WorkflowTaskParams, len(tasks))
	for i, t := range tasks {
		field := fmt.Sprintf("task %q", t.Name)
		switch {
		case t.Job.SequenceKey != "":
			return nil, fencedtype.Invalid(field, "has a sequence key: a task's order is its dependencies")
		case t.Job.IdempotencyKey != "":
			return nil, fencedtype.Invalid(field, "has an idempotency key: a task is always a job of its own")
		case t.Job.Unique != nil:
			return nil, fencedtype.Invalid(field, "has unique options: a task is always a job of its own")
		}
		job, err := t.Job.validate()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		seen := make(map[string]bool, len(t.DependsOn))
		for _, d := range t.DependsOn {
			switch _, ours := index[d]; {
			case seen[d]:
				return nil, fencedtype.Invalid(field, "depends on %q twice", d)
			case d == t.Name:
				return nil, fencedtype.Invalid(field, "depends on itself")
			case !ours && (known == nil || !known(d)):
				return nil, fencedtype.Invalid(field, "depends on %q, which is no task of the workflow", d)
			}
			if err := validName("dependency", d); err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
			seen[d] = true
		}
		out[i] = driver.WorkflowTaskParams{Name: t.Name, Job: job, DependsOn: slices.Clone(t.DependsOn), RunAnyway: t.RunAnyway}
	}
	if cycle := findCycle(tasks, index); cycle != "" {
		return nil, fencedtype.Invalid("tasks", "the dependencies form a cycle through %q", cycle)
	}
	return out, nil
}

// findCycle returns the name of a task on a cycle of the dependencies among
// tasks, or "" when they form a DAG (Kahn's algorithm: what is never freed
// is on or behind a cycle; it follows dependencies from one of those to
// name a task on the cycle itself).
func findCycle(tasks []WorkflowTaskParams, index map[string]int) string {
	waiting := make([]int, len(tasks))
	dependents := make([][]int, len(tasks))
	for i, t := range tasks {
		for _, d := range t.DependsOn {
			if j, ok := index[d]; ok {
				waiting[i]++
				dependents[j] = append(dependents[j], i)
			}
		}
	}
	ready := make([]int, 0, len(tasks))
	for i := range tasks {
		if waiting[i] == 0 {
			ready = append(ready, i)
		}
	}
	for k := 0; k < len(ready); k++ {
		for _, i := range dependents[ready[k]] {
			if waiting[i]--; waiting[i] == 0 {
				ready = append(ready, i)
			}
		}
	}
	if len(ready) == len(tasks) {
		return ""
	}
	// Walk back along unfreed dependencies until a task repeats: it is on
	// a cycle.
	at := -1
	for i := range tasks {
		if waiting[i] > 0 {
			at = i
			break
		}
	}
	visited := make(map[int]bool)
	for !visited[at] {
		visited[at] = true
		for _, d := range tasks[at].DependsOn {
			if j, ok := index[d]; ok && waiting[j] > 0 {
				at = j
				break
			}
		}
	}
	return tasks[at].Name
}

// DeleteWorkflow deletes a workflow whole: every task with its history;
// ErrNotFound when there is none. (DeleteJob refuses a single task.)
func (c *Client) DeleteWorkflow(ctx context.Context, id int64) error {
	wd, err := c.workflowDriver()
	if err != nil {
		return err
	}
	return wd.DeleteWorkflow(ctx, id)
}
