package fencedtype

import (
	"encoding/json"
	"time"
)

// WorkflowState is a workflow's state, derived from its tasks' when it is
// read: running while any task is not finished, then succeeded when every
// task succeeded, cancelled when the workflow was cancelled, else failed.
type WorkflowState string

// The states of a workflow.
const (
	WorkflowRunning   WorkflowState = "running"
	WorkflowSucceeded WorkflowState = "succeeded"
	WorkflowFailed    WorkflowState = "failed"
	WorkflowCancelled WorkflowState = "cancelled"
)

// Valid reports whether s is one of the four states.
func (s WorkflowState) Valid() bool {
	return s == WorkflowRunning || s == WorkflowSucceeded || s == WorkflowFailed || s == WorkflowCancelled
}

// Workflow is a workflow as stored: named tasks, each a job, that run once
// the tasks they depend on have succeeded (docs/design.md §6.18).
type Workflow struct {
	ID    int64         `json:"id"`
	Name  string        `json:"name"`
	State WorkflowState `json:"state"`
	// Counts are its tasks by state (a state with none is absent).
	Counts      map[JobState]int `json:"counts"`
	CreatedAt   time.Time        `json:"created_at"`
	CancelledAt *time.Time       `json:"cancelled_at"` // set by CancelWorkflow
	// Tasks are its tasks by job id, read with the workflow (GetWorkflow);
	// nil in listings.
	Tasks []WorkflowTask `json:"tasks,omitempty"`
}

// WorkflowTask is one task of a workflow as read with it.
type WorkflowTask struct {
	Name  string   `json:"name"`
	JobID int64    `json:"job_id"`
	Kind  string   `json:"kind"`
	Queue string   `json:"queue"`
	State JobState `json:"state"`
	// DependsOn are the names of the tasks it runs after, sorted.
	DependsOn []string `json:"depends_on"`
	// RunAnyway: it runs once every dependency finished, whether or not
	// each succeeded.
	RunAnyway bool `json:"run_anyway"`
	// CancelledByWorkflow: it was cancelled because a dependency failed or
	// was cancelled; a retry of that dependency puts it back to pending.
	CancelledByWorkflow bool `json:"cancelled_by_workflow"`
}

// TaskDependency is one dependency of a task as its handler reads it: the
// dependency's recorded output once it succeeded.
type TaskDependency struct {
	Name   string          `json:"name"`
	JobID  int64           `json:"job_id"`
	State  JobState        `json:"state"`
	Output json.RawMessage `json:"output"` // set when State is succeeded
	Error  string          `json:"error"`  // the dependency's last error, if any
}

// WorkflowFilter selects workflows to list: by id, ascending or (Desc)
// descending, within AfterID and BeforeID (0: unbounded), at most Limit.
type WorkflowFilter struct {
	Name     string // exact name; "" for any
	AfterID  int64
	BeforeID int64
	Desc     bool
	Limit    int
}
