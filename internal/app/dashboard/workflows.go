package dashboard

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fenced/fenced"
)

// taskPageSize is how many tasks a page of a workflow's task table shows.
const taskPageSize = 500

// maxDepsShown is how many dependencies a task's row names; the rest are
// counted.
const maxDepsShown = 10

// maxNameBytes is the longest workflow name (docs/design.md §6.18).
const maxNameBytes = 200

// workflowRow is one workflow of the list: its task counts in the order
// of states.
type workflowRow struct {
	*fenced.Workflow
	Counts []int
	Total  int
}

func rowOf(w *fenced.Workflow) workflowRow {
	r := workflowRow{Workflow: w, Counts: make([]int, len(states))}
	for s, n := range w.Counts {
		if i := slices.Index(states, s); i >= 0 {
			r.Counts[i] = n
		}
		r.Total += n
	}
	return r
}

// workflowsPage is the data of /workflows.
type workflowsPage struct {
	Chrome
	Now       time.Time
	Name      string // the name filter; "" for every workflow
	States    []fenced.JobState
	Workflows []workflowRow
	// Newer and Older are the query strings of the adjacent pages, ""
	// when there is none.
	Newer, Older template.URL
}

// nameQuery is the query string of the name filter with extra name/value
// pairs.
func nameQuery(name string, extra ...string) template.URL {
	v := url.Values{}
	if name != "" {
		v.Set("name", name)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		v.Set(extra[i], extra[i+1])
	}
	return template.URL(v.Encode())
}

// workflows serves /workflows?name=: the workflows, newest first, in
// keyset pages of pageSize as the job browser's (?before=ID, ?after=ID).
// A page is one list statement (pageSize+1 workflows with their counts)
// and a clock read; ?id=N opens workflow N.
func (h *Handler) workflows(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if h.jumpToID(w, r, "/workflows/") {
		return
	}
	p := &workflowsPage{Name: strings.TrimSpace(q.Get("name")), States: states}
	if len(p.Name) > maxNameBytes {
		h.fail(w, r, fmt.Errorf("%w: a workflow name has at most %d bytes", fenced.ErrInvalid, maxNameBytes))
		return
	}
	before, err1 := idParam(q, "before")
	after, err2 := idParam(q, "after")
	if err := errors.Join(err1, err2); err != nil {
		h.fail(w, r, err)
		return
	}
	list, newer, older, err := h.workflowPage(r.Context(), p.Name, before, after)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p.Newer, p.Older = newer, older
	for _, wf := range list {
		p.Workflows = append(p.Workflows, rowOf(wf))
	}
	if p.Now, err = h.c.DatabaseTime(r.Context()); err == nil {
		p.Clock = clock(p.Now, false)
	}
	h.render(w, r, http.StatusOK, "workflows", p)
}

// workflowPage reads one page of workflows newest first, as page reads
// one of jobs: the first, the one older than before, or the one newer
// than after.
func (h *Handler) workflowPage(ctx context.Context, name string, before, after int64) (list []*fenced.Workflow, newer, older template.URL, err error) {
	f := fenced.WorkflowFilter{Name: name, Limit: pageSize + 1}
	if after > 0 {
		f.AfterID = after
		if list, err = h.c.ListWorkflows(ctx, f); err != nil {
			return nil, "", "", err
		}
		if len(list) <= pageSize {
			return h.workflowPage(ctx, name, 0, 0) // the newest: the first page, full
		}
		list = list[:pageSize]
		slices.Reverse(list)
		return list, nameQuery(name, "after", strconv.FormatInt(list[0].ID, 10)),
			nameQuery(name, "before", strconv.FormatInt(list[len(list)-1].ID, 10)), nil
	}
	f.Desc, f.BeforeID = true, before
	if list, err = h.c.ListWorkflows(ctx, f); err != nil {
		return nil, "", "", err
	}
	more := len(list) > pageSize
	list = list[:min(len(list), pageSize)]
	if before > 0 && len(list) > 0 {
		newer = nameQuery(name, "after", strconv.FormatInt(list[0].ID, 10))
	} else if before > 0 {
		newer = nameQuery(name)
	}
	if more {
		older = nameQuery(name, "before", strconv.FormatInt(list[len(list)-1].ID, 10))
	}
	return list, newer, older, nil
}

// taskRow is one row of a workflow's task table.
type taskRow struct {
	fenced.WorkflowTask
	Deps     []taskLink // the first maxDepsShown dependencies
	MoreDeps int        // the others
}

// taskLink is a dependency as its row links it: its name and job.
type taskLink struct {
	Name  string
	JobID int64 // 0: no task of the workflow has the name
}

// workflowDetail is the data of /workflows/{id}.
type workflowDetail struct {
	Chrome
	Now      time.Time
	Workflow workflowRow
	States   []fenced.JobState
	Graph    *workflowGraph
	Tasks    []taskRow // this page of the table
	// Page is the table's page (from 1) of Pages; PrevPage and NextPage
	// are 0 when there is none.
	Page, Pages, PrevPage, NextPage int
	First, Last                     int // the rows shown, from 1
	Actions                         []*workflowAction
	// GraphMaxPerLayer, GraphMaxLayers and GraphMaxEdges bound the graph,
	// for the page's note.
	GraphMaxPerLayer, GraphMaxLayers, GraphMaxEdges int
	// Refresh: the page reloads itself, while the workflow runs (a
	// finished one changes only by an action).
	Refresh bool
}

// workflow serves /workflows/{id}?page=N: the workflow's counts, its graph
// and its tasks (taskPageSize a page), from one read of the workflow
// (GetWorkflow) and a clock read. It reloads itself while the workflow
// runs.
func (h *Handler) workflow(w http.ResponseWriter, r *http.Request) {
	id, ok := h.workflowID(w, r)
	if !ok {
		return
	}
	wf, err := h.c.GetWorkflow(r.Context(), id)
	if err != nil {
		h.workflowNotFoundOr(w, r, id, err)
		return
	}
	page := 1
	if s := r.URL.Query().Get("page"); s != "" {
		if page, err = strconv.Atoi(s); err != nil || page < 1 {
			h.fail(w, r, fmt.Errorf("%w: page %q is not a positive number", fenced.ErrInvalid, s))
			return
		}
	}
	p := &workflowDetail{Workflow: rowOf(wf), States: states, Graph: layout(wf), Actions: workflowActionsFor(wf),
		GraphMaxPerLayer: graphMaxPerLayer, GraphMaxLayers: graphMaxLayers, GraphMaxEdges: graphMaxEdges}
	p.Pages = max(1, (len(wf.Tasks)+taskPageSize-1)/taskPageSize)
	p.Page = min(page, p.Pages)
	if p.Page > 1 {
		p.PrevPage = p.Page - 1
	}
	if p.Page < p.Pages {
		p.NextPage = p.Page + 1
	}
	jobOf := make(map[string]int64, len(wf.Tasks))
	for _, t := range wf.Tasks {
		jobOf[t.Name] = t.JobID
	}
	from, to := (p.Page-1)*taskPageSize, min(p.Page*taskPageSize, len(wf.Tasks))
	p.First, p.Last = from+1, to
	for _, t := range wf.Tasks[from:to] {
		row := taskRow{WorkflowTask: t, MoreDeps: max(0, len(t.DependsOn)-maxDepsShown)}
		for _, d := range t.DependsOn[:min(len(t.DependsOn), maxDepsShown)] {
			row.Deps = append(row.Deps, taskLink{Name: d, JobID: jobOf[d]})
		}
		p.Tasks = append(p.Tasks, row)
	}
	p.Refresh = wf.State == fenced.WorkflowRunning
	if p.Now, err = h.c.DatabaseTime(r.Context()); err == nil {
		p.Clock = clock(p.Now, p.Refresh)
	}
	h.render(w, r, http.StatusOK, "workflow", p)
}

// workflowID reads the {id} of a workflow's path, or answers 404.
func (h *Handler) workflowID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		h.render(w, r, http.StatusNotFound, "error", &errorPage{Title: "Not found",
			Message: fmt.Sprintf("%q is not a workflow id.", r.PathValue("id"))})
		return 0, false
	}
	return id, true
}

// workflowNotFoundOr renders a missing workflow as 404 and any other error
// as fail does.
func (h *Handler) workflowNotFoundOr(w http.ResponseWriter, r *http.Request, id int64, err error) {
	if errors.Is(err, fenced.ErrNotFound) {
		h.render(w, r, http.StatusNotFound, "error", &errorPage{Title: "Not found",
			Message: fmt.Sprintf("There is no workflow %d.", id)})
		return
	}
	h.fail(w, r, err)
}

// workflowAction is one thing a person can do to a workflow.
type workflowAction struct {
	Name    string // in forms and the log: cancel, retry
	Verb    string // the button
	Done    string // the result
	Explain string // what it does, on the confirmation page
	do      func(ctx context.Context, c *fenced.Client, id int64) (*fenced.Workflow, error)
}

var workflowActions = []*workflowAction{
	{Name: "cancel", Verb: "Cancel", Done: "cancelled",
		Explain: "cancels the workflow: its pending and queued tasks are cancelled at once, and its running ones are " +
			"asked to stop (their workers learn it at their next heartbeat). Retry undoes it for the tasks that did not finish.",
		do: func(ctx context.Context, c *fenced.Client, id int64) (*fenced.Workflow, error) {
			return c.CancelWorkflow(ctx, id)
		}},
	{Name: "retry", Verb: "Retry", Done: "retried",
		Explain: "resumes the workflow: every failed task, and every task cancelled other than by its workflow, is " +
			"queued again with as many attempts again as it had, and the tasks that depend on them wait for them again.",
		do: func(ctx context.Context, c *fenced.Client, id int64) (*fenced.Workflow, error) {
			return c.RetryWorkflow(ctx, id)
		}},
}

func workflowActionNamed(name string) *workflowAction {
	for _, a := range workflowActions {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// workflowActionsFor is what the workflow's page offers: cancel while a
// task has not finished and the workflow is not cancelled, retry when a
// task failed or was cancelled.
func workflowActionsFor(w *fenced.Workflow) []*workflowAction {
	var out []*workflowAction
	unfinished := w.Counts[fenced.JobPending] + w.Counts[fenced.JobQueued] + w.Counts[fenced.JobRunning]
	if unfinished > 0 && w.CancelledAt == nil {
		out = append(out, workflowActions[0])
	}
	if w.Counts[fenced.JobFailed]+w.Counts[fenced.JobCancelled] > 0 {
		out = append(out, workflowActions[1])
	}
	return out
}

// workflowConfirmPage is the data of a workflow action's confirmation and
// of its result.
type workflowConfirmPage struct {
	Chrome
	Action   *workflowAction
	Workflow workflowRow
	States   []fenced.JobState
}

// workflowConfirm serves GET /workflows/{id}/confirm?action=NAME: what the
// action will do, and the form that does it. Nothing changes until the
// form is posted.
func (h *Handler) workflowConfirm(w http.ResponseWriter, r *http.Request) {
	id, ok := h.workflowID(w, r)
	if !ok {
		return
	}
	a := workflowActionNamed(r.URL.Query().Get("action"))
	if a == nil {
		h.render(w, r, http.StatusBadRequest, "error", &errorPage{Title: "Invalid request",
			Message: fmt.Sprintf("%q is not an action on a workflow: want cancel or retry.", r.URL.Query().Get("action"))})
		return
	}
	wf, err := h.c.GetWorkflow(r.Context(), id)
	if err != nil {
		h.workflowNotFoundOr(w, r, id, err)
		return
	}
	h.render(w, r, http.StatusOK, "workflow-confirm", &workflowConfirmPage{Action: a, Workflow: rowOf(wf), States: states})
}

// workflowAct serves POST /workflows/{id}/act: it checks the session's
// CSRF token, runs the action, logs it and shows the workflow as the
// action left it.
func (h *Handler) workflowAct(w http.ResponseWriter, r *http.Request) {
	if !sessionOf(r).checkCSRF(r) {
		h.log.Warn("dashboard action refused: missing or wrong CSRF token", "remote", r.RemoteAddr)
		h.render(w, r, http.StatusForbidden, "error", &errorPage{Title: "Refused",
			Message: "The form did not carry this session's token. Open the page again and retry."})
		return
	}
	id, ok := h.workflowID(w, r)
	if !ok {
		return
	}
	a := workflowActionNamed(r.PostFormValue("action"))
	if a == nil {
		h.render(w, r, http.StatusBadRequest, "error", &errorPage{Title: "Invalid request",
			Message: "The form names no known action on a workflow."})
		return
	}
	wf, err := a.do(r.Context(), h.c, id)
	attrs := []any{"action", a.Name, "workflow", id, "remote", r.RemoteAddr}
	if err != nil {
		attrs = append(attrs, "result", "failed", "error", err.Error())
	} else {
		attrs = append(attrs, "result", a.Done, "state", wf.State)
	}
	h.log.Info("dashboard workflow action", attrs...)
	if err != nil {
		h.workflowNotFoundOr(w, r, id, err)
		return
	}
	h.render(w, r, http.StatusOK, "workflow-result", &workflowConfirmPage{Action: a, Workflow: rowOf(wf), States: states})
}
