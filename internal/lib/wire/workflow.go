package wire

import "github.com/fenced/fenced"

// Workflow is a workflow as the command's --json and the HTTP service show
// it: its times in fencedtype.TimeLayout, counts an object (every state with
// a task; {} for none), and, when read with them, its tasks, each with its
// depends_on a list ([] for none). Tasks is absent in listings.
type Workflow struct {
	ID          int64                   `json:"id"`
	Name        string                  `json:"name"`
	State       fenced.WorkflowState    `json:"state"`
	Counts      map[fenced.JobState]int `json:"counts"`
	CreatedAt   Time                    `json:"created_at"`
	CancelledAt *Time                   `json:"cancelled_at"`
	Tasks       []fenced.WorkflowTask   `json:"tasks,omitempty"`
}

// WorkflowFrom is the wire form of w; withTasks keeps its tasks (a
// workflow read whole), else they are left out (a listing).
func WorkflowFrom(w *fenced.Workflow, withTasks bool) Workflow {
	out := Workflow{ID: w.ID, Name: w.Name, State: w.State, Counts: w.Counts,
		CreatedAt: Time(w.CreatedAt), CancelledAt: (*Time)(w.CancelledAt)}
	if out.Counts == nil {
		out.Counts = map[fenced.JobState]int{}
	}
	if withTasks {
		out.Tasks = make([]fenced.WorkflowTask, len(w.Tasks))
		for i, t := range w.Tasks {
			t.DependsOn = List(t.DependsOn)
			out.Tasks[i] = t
		}
	}
	return out
}

// Workflows is the wire form of a listing of workflows (never nil).
func Workflows(ws []*fenced.Workflow) []Workflow {
	out := make([]Workflow, len(ws))
	for i, w := range ws {
		out[i] = WorkflowFrom(w, false)
	}
	return out
}
