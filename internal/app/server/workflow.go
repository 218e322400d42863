package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/wire"
)

// Workflows over HTTP (docs/design.md §6.18): an operator's enqueue, reads,
// cancel, retry and delete of a workflow, a task's read of its
// dependencies, and a running task's fenced fan-out (POST
// /v1/jobs/{id}/tasks), refused with 409 stale_fence as every other write of
// an attempt that is no longer current.

// workflowRequest is the body of POST /v1/workflows: a name and its tasks.
// Each task is decoded on its own (taskRequest), as strictly as a body.
type workflowRequest struct {
	Name  string            `json:"name"`
	Tasks []json.RawMessage `json:"tasks"`
}

// addTasksRequest is the body of POST /v1/jobs/{id}/tasks: the attempt's
// fence and the tasks it adds to its workflow.
type addTasksRequest struct {
	Fence *int64            `json:"fence"`
	Tasks []json.RawMessage `json:"tasks"`
}

// taskRequest is one task: its name, the names of the tasks it runs after,
// whether it runs once they finished even if some failed (run_anyway), and
// its job, with the fields of an enqueue (enqueueRequest) but the
// idempotency key, the sequence and unique options, which a task cannot
// have.
type taskRequest struct {
	Name      string   `json:"name"`
	DependsOn []string `json:"depends_on"`
	RunAnyway bool     `json:"run_anyway"`

	Kind           string          `json:"kind"`
	Args           json.RawMessage `json:"args"`
	Queue          string          `json:"queue"`
	Priority       int             `json:"priority"`
	RunAt          *string         `json:"run_at"`
	DelayMs        *int64          `json:"delay_ms"`
	MaxAttempts    int             `json:"max_attempts"`
	ConcurrencyKey string          `json:"concurrency_key"`
	Metadata       json.RawMessage `json:"metadata"`
	TimeoutMs      *int64          `json:"timeout_ms"`
	Retry          *retryRequest   `json:"retry"`
	Tags           []string        `json:"tags"`
}

// job is the task's job as an enqueue request.
func (t *taskRequest) job() enqueueRequest {
	return enqueueRequest{Kind: t.Kind, Args: t.Args, Queue: t.Queue, Priority: t.Priority, RunAt: t.RunAt,
		DelayMs: t.DelayMs, MaxAttempts: t.MaxAttempts, ConcurrencyKey: t.ConcurrencyKey, Metadata: t.Metadata,
		TimeoutMs: t.TimeoutMs, Retry: t.Retry, Tags: t.Tags}
}

// decodeTasks decodes the tasks of a body, each as strictly as a body
// (decodeJSON: exact field names, no key twice, numbers that fit) and its
// job as an enqueue's (enqueueRequest.params, with h's trace headers). A
// refusal names the field as tasks[i].field. The library checks the rest:
// names, dependencies, the graph and each job.
func decodeTasks(raw []json.RawMessage, h http.Header) ([]fenced.WorkflowTaskParams, error) {
	switch {
	case len(raw) == 0:
		return nil, invalid("tasks", "is required: at least one task")
	case len(raw) > fenced.MaxWorkflowTasks:
		return nil, invalid("tasks", fmt.Sprintf("%d tasks, the limit is %d", len(raw), fenced.MaxWorkflowTasks))
	}
	out := make([]fenced.WorkflowTaskParams, len(raw))
	for i, b := range raw {
		at := func(err error) error { return taskField(i, err) }
		var t taskRequest
		if err := decodeJSON(b, &t); err != nil {
			return nil, at(err)
		}
		req := t.job()
		p, err := req.params(h)
		if err != nil {
			return nil, at(err)
		}
		out[i] = fenced.WorkflowTaskParams{Name: t.Name, Job: p, DependsOn: t.DependsOn, RunAnyway: t.RunAnyway}
	}
	return out, nil
}

// taskField names the field of a refusal of task i: tasks[i].field, or
// tasks[i] for the task as a whole.
func taskField(i int, err error) error {
	var ae *apiError
	if !errors.As(err, &ae) {
		return err
	}
	if b, ok := ae.body.(*invalidBody); ok {
		field := "tasks[" + strconv.Itoa(i) + "]"
		if b.Field != "body" {
			field += "." + b.Field
		}
		return invalid(field, "task "+strconv.Itoa(i)+": "+b.Message)
	}
	return err
}

// workflowInvalid names the field of the library's refusal of a workflow's
// input: its name, the fence or job of a fan-out, else its tasks (the
// message names the task).
func workflowInvalid(err error) error {
	var inv *fenced.InvalidError
	if !errors.As(err, &inv) {
		return err
	}
	switch inv.Field {
	case "workflow name":
		return invalid("name", err.Error())
	case "fence":
		return invalid("fence", err.Error())
	case "job": // AddWorkflowTasks of a job that is no task
		return invalid("id", err.Error())
	}
	return invalid("tasks", err.Error())
}

// workflowReply is a workflow, read with its tasks.
type workflowReply struct {
	wire.Workflow
	DBTime wire.Time `json:"db_time,omitzero"`
}

// workflowRead is the reply of w, stamped with a database time read now
// (the statements that wrote and read it return none).
func (s *Server) workflowRead(r *http.Request, w *fenced.Workflow) *reply {
	at := s.dbNow(r.Context())
	return ok(workflowReply{wire.WorkflowFrom(w, true), wire.Time(at)}, at)
}

// enqueueWorkflow: POST /v1/workflows {name, tasks} → 201 with the
// workflow and its tasks, written in one transaction; 400 with nothing
// written for anything invalid (a name, a task's job, a dependency on no
// task, a cycle).
func (s *Server) enqueueWorkflow(r *http.Request) (*reply, error) {
	var req workflowRequest
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	tasks, err := decodeTasks(req.Tasks, r.Header)
	if err != nil {
		return nil, err
	}
	w, err := s.c.EnqueueWorkflow(r.Context(), nil, fenced.WorkflowParams{Name: req.Name, Tasks: tasks})
	if err != nil {
		return nil, workflowInvalid(err)
	}
	rep := s.workflowRead(r, w)
	rep.status = http.StatusCreated
	rep.location = "/v1/workflows/" + strconv.FormatInt(w.ID, 10)
	return rep, nil
}

// getWorkflow: GET /v1/workflows/{id} → the workflow with its state, counts
// and tasks.
func (s *Server) getWorkflow(r *http.Request) (*reply, error) {
	id, err := pathJobID(r)
	if err != nil {
		return nil, err
	}
	w, err := s.c.GetWorkflow(r.Context(), id)
	if err != nil {
		return nil, workflowNotFound(id, err)
	}
	return s.workflowRead(r, w), nil
}

// workflowsReply is a page of workflows, paged as a page of jobs
// (jobsReply).
type workflowsReply struct {
	Workflows  []wire.Workflow `json:"workflows"`
	NextAfter  *int64          `json:"next_after"`
	NextBefore *int64          `json:"next_before,omitempty"`
	DBTime     wire.Time       `json:"db_time,omitzero"`
}

// listWorkflows: GET /v1/workflows?name=&limit=&after=&before=&order= → a
// page of workflows in id order (order=desc: newest first) with their
// counts, without their tasks.
func (s *Server) listWorkflows(r *http.Request) (*reply, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, invalid("query", "the query string is malformed: "+err.Error())
	}
	f, err := workflowFilter(q)
	if err != nil {
		return nil, err
	}
	ws, err := s.c.ListWorkflows(r.Context(), f)
	if err != nil {
		return nil, err
	}
	out := workflowsReply{Workflows: wire.Workflows(ws)}
	limit := f.Limit
	if limit == 0 {
		limit = fenced.DefaultListLimit
	}
	if len(ws) == limit && f.Desc {
		out.NextBefore = &ws[len(ws)-1].ID
	} else if len(ws) == limit {
		out.NextAfter = &ws[len(ws)-1].ID
	}
	out.DBTime = wire.Time(s.dbNow(r.Context()))
	return ok(out, time.Time(out.DBTime)), nil
}

// workflowFilter reads the query of a workflow list strictly: known
// parameters, each at most once and not empty.
func workflowFilter(q url.Values) (fenced.WorkflowFilter, error) {
	var f fenced.WorkflowFilter
	for k, v := range q {
		if len(v) > 1 {
			return f, invalid(k, "is given more than once")
		}
		if v[0] == "" {
			return f, invalid(k, "is empty; leave the parameter out to not filter")
		}
		var err error
		switch k {
		case "name":
			f.Name = v[0] // ListWorkflows checks it
		case "limit":
			f.Limit, err = strconv.Atoi(v[0])
		case "after":
			f.AfterID, err = strconv.ParseInt(v[0], 10, 64)
		case "before":
			f.BeforeID, err = strconv.ParseInt(v[0], 10, 64)
		case "order":
			if v[0] != "asc" && v[0] != "desc" {
				return f, invalid(k, strconv.Quote(v[0])+" is not asc or desc")
			}
			f.Desc = v[0] == "desc"
		default:
			return f, invalid(k, "unknown parameter; want name, limit, after, before or order")
		}
		if err != nil {
			return f, invalid(k, strconv.Quote(v[0])+" is not an integer")
		}
	}
	if _, given := q["limit"]; given && f.Limit == 0 {
		return f, invalid("limit", "0 is outside 1 to "+strconv.Itoa(fenced.MaxListLimit))
	}
	return f, nil
}

// cancelWorkflow: POST /v1/workflows/{id}/cancel → the workflow: its
// pending and queued tasks cancelled, its running ones asked to stop.
func (s *Server) cancelWorkflow(r *http.Request) (*reply, error) {
	return s.workflowAdmin(r, (*fenced.Client).CancelWorkflow)
}

// retryWorkflow: POST /v1/workflows/{id}/retry → the workflow: its failed
// tasks, and the cancelled ones its workflow did not cancel, queued again;
// their dependents wait for them again.
func (s *Server) retryWorkflow(r *http.Request) (*reply, error) {
	return s.workflowAdmin(r, (*fenced.Client).RetryWorkflow)
}

// workflowAdmin applies op (cancel or retry; an empty body or {}) to the
// path's workflow.
func (s *Server) workflowAdmin(r *http.Request, op func(*fenced.Client, context.Context, int64) (*fenced.Workflow, error)) (*reply, error) {
	if err := decodeBody(r, &cancelRequest{}, true); err != nil {
		return nil, err
	}
	id, err := pathJobID(r)
	if err != nil {
		return nil, err
	}
	w, err := op(s.c, r.Context(), id)
	if err != nil {
		return nil, workflowNotFound(id, err)
	}
	return s.workflowRead(r, w), nil
}

// workflowDeletedReply answers a delete.
type workflowDeletedReply struct {
	ID      int64     `json:"id"`
	Deleted bool      `json:"deleted"`
	DBTime  wire.Time `json:"db_time,omitzero"`
}

// deleteWorkflow: DELETE /v1/workflows/{id} → {id, "deleted": true}: the
// workflow and every task, with their histories, are gone (a running
// task's worker finds no job at its next write).
func (s *Server) deleteWorkflow(r *http.Request) (*reply, error) {
	id, err := pathJobID(r)
	if err != nil {
		return nil, err
	}
	if err := s.c.DeleteWorkflow(r.Context(), id); err != nil {
		return nil, workflowNotFound(id, err)
	}
	at := s.dbNow(r.Context())
	return ok(workflowDeletedReply{id, true, wire.Time(at)}, at), nil
}

// dependenciesReply is a task's dependencies by name.
type dependenciesReply struct {
	ID           int64                   `json:"id"`
	Dependencies []fenced.TaskDependency `json:"dependencies"`
	DBTime       wire.Time               `json:"db_time,omitzero"`
}

// taskDependencies: GET /v1/jobs/{id}/dependencies → the dependencies of
// the task: each one's name, job id, state, output once it succeeded and
// last error. [] for a job that is no task or has none; 404 when there is
// no such job.
func (s *Server) taskDependencies(r *http.Request) (*reply, error) {
	id, err := pathJobID(r)
	if err != nil {
		return nil, err
	}
	deps, err := s.c.TaskDependencies(r.Context(), id)
	if err != nil {
		return nil, err
	}
	if len(deps) == 0 {
		// None: say whether the job exists (a read, deciding nothing).
		if _, _, err := s.c.GetJob(r.Context(), id); err != nil {
			return nil, jobNotFound(id, err)
		}
	}
	at := s.dbNow(r.Context())
	return ok(dependenciesReply{ID: id, Dependencies: wire.List(deps), DBTime: wire.Time(at)}, at), nil
}

// addWorkflowTasks: POST /v1/jobs/{id}/tasks {fence, tasks} → the workflow
// with the new tasks: the running attempt of the path's task adds tasks to
// its workflow, checked and written in one transaction. 409 stale_fence
// when the attempt is no longer current, and nothing is added.
func (s *Server) addWorkflowTasks(r *http.Request) (*reply, error) {
	var req addTasksRequest
	ref, err := s.jobWrite(r, &req, func() *int64 { return req.Fence })
	if err != nil {
		return nil, err
	}
	tasks, err := decodeTasks(req.Tasks, r.Header)
	if err != nil {
		return nil, err
	}
	w, err := s.c.AddWorkflowTasks(r.Context(), nil, ref, tasks)
	if err != nil {
		return nil, jobNotFound(ref.ID, workflowInvalid(err))
	}
	return s.workflowRead(r, w), nil
}

// workflowNotFound names the workflow in a not-found.
func workflowNotFound(id int64, err error) error {
	if errors.Is(err, fenced.ErrNotFound) {
		e := newError(http.StatusNotFound, codeNotFound, "workflow "+strconv.FormatInt(id, 10)+" not found")
		e.fromDB = true
		return e
	}
	return err
}

// DecodeWorkflow reads body, a workflow as POST /v1/workflows takes it
// ({"name", "tasks": [...]}), as strictly as the route does, for the
// command's "workflow enqueue --file". A refusal is a *fenced.InvalidError
// naming the field as the route's 400 does; the library checks the rest
// when the workflow is enqueued.
func DecodeWorkflow(body []byte) (fenced.WorkflowParams, error) {
	var req workflowRequest
	err := decodeJSON(body, &req)
	var tasks []fenced.WorkflowTaskParams
	if err == nil {
		tasks, err = decodeTasks(req.Tasks, nil)
	}
	var ae *apiError
	if errors.As(err, &ae) {
		if b, ok := ae.body.(*invalidBody); ok {
			return fenced.WorkflowParams{}, &fenced.InvalidError{Field: b.Field, Reason: b.Message}
		}
	}
	if err != nil {
		return fenced.WorkflowParams{}, err
	}
	return fenced.WorkflowParams{Name: req.Name, Tasks: tasks}, nil
}
