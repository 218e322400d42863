package driver

import (
	"context"

	"github.com/fenced/fenced/fencedtype"
)

// WorkflowDriver is the workflows, a capability a job backend implements
// beside its JobDriver (docs/design.md §6.18). A workflow's tasks are jobs
// (their workflow_id and task_name set); a task with a dependency that has
// not finished is pending, which no claim takes. The backend keeps, in the
// statement or transaction of every transition that finishes a task or
// takes it out of a finished state, the release rule:
//
//   - a task's dependency succeeded: its edge is done; a pending task whose
//     every edge is done goes to queued;
//   - a dependency failed (dead letter) or was cancelled: its edge failed;
//     a pending task with a failed edge is cancelled (CancelledByWorkflow),
//     which fails its own dependents' edges in turn, unless it runs anyway
//     (RunAnyway): then it goes to queued once no edge is waiting;
//   - a failed or cancelled dependency retried (RetryJob): its failed
//     edges wait again; a task cancelled by its workflow that has no failed
//     edge left goes back to pending (and its own failed edges wait
//     again), and a queued task with a waiting edge goes back to pending.
//
// Every end is the attempt's fenced write, so only the current attempt's
// completion releases a dependent: a stale attempt's end writes nothing and
// releases nothing.
type WorkflowDriver interface {
	// EnqueueWorkflow inserts a workflow and its tasks (a valid DAG:
	// ValidateWorkflow) in one transaction, or inside tx when it is
	// non-nil, and returns the workflow as read with its tasks.
	EnqueueWorkflow(ctx context.Context, tx Tx, w WorkflowParams) (*fencedtype.Workflow, error)
	// AddWorkflowTasks adds tasks to the workflow of ref's job while ref is
	// its current running attempt with an unexpired lease, as JobTx checks
	// it (the job row share-locked), inside tx when it is non-nil (a JobTx
	// of ref) or else in a transaction of its own. A task may depend on the
	// new tasks and on any task of the workflow (by name); a dependency
	// that already finished counts as it finished. A stale ref adds nothing
	// and gets its diagnosed *fencedtype.StaleError or ErrNotFound.
	AddWorkflowTasks(ctx context.Context, tx Tx, ref fencedtype.JobRef, tasks []WorkflowTaskParams) (*fencedtype.Workflow, error)
	// GetWorkflow reads one workflow with its tasks; ErrNotFound when
	// there is none.
	GetWorkflow(ctx context.Context, id int64) (*fencedtype.Workflow, error)
	// ListWorkflows lists workflows with their counts, without tasks.
	ListWorkflows(ctx context.Context, f fencedtype.WorkflowFilter) ([]*fencedtype.Workflow, error)
	// CancelWorkflow records the workflow cancelled, cancels its pending
	// and queued tasks and asks its running ones to stop (as CancelJob
	// does), in one transaction; ErrNotFound when there is none.
	CancelWorkflow(ctx context.Context, id int64) (*fencedtype.Workflow, error)
	// RetryWorkflow puts every failed task of the workflow, and every
	// cancelled one its workflow did not cancel, back to queued (as
	// RetryJob does: their dependents resume), clears its cancel, in one
	// transaction, and returns it as read after.
	RetryWorkflow(ctx context.Context, id int64) (*fencedtype.Workflow, error)
	// DeleteWorkflow deletes a workflow with every task (and their
	// attempt histories and edges) in one transaction; ErrNotFound when
	// there is none. A running task's later writes find no row.
	DeleteWorkflow(ctx context.Context, id int64) error
	// TaskDependencies reads the dependencies of the task job id, by name;
	// nil for a job that is no task or has none.
	TaskDependencies(ctx context.Context, id int64) ([]fencedtype.TaskDependency, error)
}

// WorkflowParams are the inputs of EnqueueWorkflow.
type WorkflowParams struct {
	Name  string
	Tasks []WorkflowTaskParams
}

// WorkflowTaskParams are one task: its job (validated, with no sequence
// key, idempotency key or unique options) and the names of the tasks it
// depends on (distinct).
type WorkflowTaskParams struct {
	Name      string
	Job       EnqueueParams
	DependsOn []string
	RunAnyway bool
}
