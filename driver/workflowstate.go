package driver

import "github.com/fenced/fenced/fencedtype"

// WorkflowStateOf derives a workflow's state from its tasks' counts by
// state and whether it was cancelled (cancelled_at set): running while any
// task is not finished; then succeeded when every task succeeded,
// cancelled when it was cancelled, else failed.
func WorkflowStateOf(counts map[fencedtype.JobState]int, cancelled bool) fencedtype.WorkflowState {
	total := 0
	for s, n := range counts {
		if !s.Finished() && n > 0 {
			return fencedtype.WorkflowRunning
		}
		total += n
	}
	switch {
	case counts[fencedtype.JobSucceeded] == total:
		return fencedtype.WorkflowSucceeded
	case cancelled:
		return fencedtype.WorkflowCancelled
	}
	return fencedtype.WorkflowFailed
}

// TaskCancelledError is RetryJob's refusal of a task that may not run: one
// its workflow cancelled, or one with a failed dependency that does not
// run anyway (an *InvalidError of "job").
func TaskCancelledError(id int64, task string) error {
	return fencedtype.Invalid("job", "job %d (task %q) cannot run: a dependency failed or was cancelled; retry that dependency", id, task)
}

// TaskDeleteError is DeleteJob's refusal of a workflow's task (an
// *InvalidError of "job"): a workflow is deleted whole.
func TaskDeleteError(id int64, task string, workflow int64) error {
	return fencedtype.Invalid("job", "job %d is task %q of workflow %d: delete the workflow, whole", id, task, workflow)
}

// TaskCancelError is the last error a task cancelled by its workflow
// records.
const TaskCancelError = "workflow: a dependency failed or was cancelled"
