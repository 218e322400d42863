package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/fenced/fenced"
)

// bulkLimit bounds the jobs one bulk action changes: the newest bulkLimit
// matching jobs in the states the action applies to. The page says so; a
// second action takes the next ones.
const bulkLimit = fenced.MaxListLimit

// action is one thing a person can do to a job from the dashboard.
//
// Queue actions (pause and resume) are not job actions: they take a queue,
// not job ids, and get their own table and their own buttons in the
// "queue-actions" block of the jobs page.
type action struct {
	Name    string            // in forms and the log: retry, cancel, delete
	Verb    string            // the button: Retry
	Done    string            // the result: retried
	States  []fenced.JobState // the states it applies to; nil: every state
	Explain string            // what it does, on the confirmation page
	Danger  bool              // it cannot be undone
	do      func(ctx context.Context, c *fenced.Client, id int64) error
}

var actions = []*action{
	{Name: "retry", Verb: "Retry", Done: "retried", States: []fenced.JobState{fenced.JobFailed, fenced.JobCancelled},
		Explain: "puts a failed or cancelled job back to queued, to run now, with as many attempts again as it had.",
		do: func(ctx context.Context, c *fenced.Client, id int64) error {
			_, err := c.RetryJob(ctx, id)
			return err
		}},
	{Name: "cancel", Verb: "Cancel", Done: "cancelled", States: []fenced.JobState{fenced.JobQueued, fenced.JobRunning},
		Explain: "cancels a queued job at once; a running job is asked to stop, and its worker learns it at its next heartbeat.",
		do: func(ctx context.Context, c *fenced.Client, id int64) error {
			_, err := c.CancelJob(ctx, id)
			return err
		}},
	{Name: "delete", Verb: "Delete", Done: "deleted", Danger: true,
		Explain: "deletes the job and its attempt history, in any state. A running job's worker can write nothing more " +
			"for it (its next heartbeat finds no job). This cannot be undone.",
		do: func(ctx context.Context, c *fenced.Client, id int64) error { return c.DeleteJob(ctx, id) }},
}

func actionNamed(name string) *action {
	for _, a := range actions {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// appliesTo reports whether a can change a job in state s.
func (a *action) appliesTo(s fenced.JobState) bool {
	return a.States == nil || slices.Contains(a.States, s)
}

// actionsFor is the actions that apply to j in its state.
func actionsFor(j *fenced.Job) []*action {
	var out []*action
	for _, a := range actions {
		if a.appliesTo(j.State) && !(a.Name == "cancel" && j.CancelRequested) {
			out = append(out, a)
		}
	}
	return out
}

// bulkActions is the actions offered on every job of a filter.
func bulkActions() []*action { return actions }

// target is what an action is asked to change: one job, or the jobs
// matching a filter.
type target struct {
	JobID  int64 // one job; 0 for the filter
	Filter listFilter
}

// targetOf reads the target of a query string or form: job=ID, or the
// filter.
func targetOf(v url.Values) (target, error) {
	t := target{Filter: filterOf(v)}
	if s := v.Get("job"); s != "" {
		id, err := fenced.ParseJobID(s)
		if err != nil {
			return t, err
		}
		t.JobID = id
	}
	return t, nil
}

// values is the target as form fields.
func (t target) values() url.Values {
	if t.JobID > 0 {
		return url.Values{"job": {strconv.FormatInt(t.JobID, 10)}}
	}
	return t.Filter.values()
}

// back is the page to return to after acting.
func (t target) back(a *action) string {
	if t.JobID > 0 && a.Name != "delete" {
		return "/jobs/" + strconv.FormatInt(t.JobID, 10)
	}
	if q := t.Filter.Query(); q != "" {
		return "/jobs?" + string(q)
	}
	return "/jobs"
}

// ids lists the jobs a changes for t: the one job, or the newest bulkLimit
// jobs of t's filter in the states a applies to (one list statement per
// state; one for an action on every state).
func (h *Handler) ids(ctx context.Context, a *action, t target) ([]int64, error) {
	if t.JobID > 0 {
		return []int64{t.JobID}, nil
	}
	f := t.Filter.jobFilter()
	var want []fenced.JobState
	switch {
	case f.State != "" && !a.appliesTo(f.State):
		return nil, nil
	case f.State != "" || a.States == nil:
		want = []fenced.JobState{f.State}
	default:
		want = a.States
	}
	var ids []int64
	for _, s := range want {
		f.State, f.Desc, f.Limit = s, true, bulkLimit-len(ids)
		if f.Limit == 0 {
			break
		}
		jobs, err := h.c.ListJobs(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			ids = append(ids, j.ID)
		}
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	return ids, nil
}

// confirmPage is the data of /confirm: what an action will do, and the
// form that does it.
type confirmPage struct {
	Chrome
	Action    *action
	Target    target
	Job       *fenced.Job // the one job
	Count     int         // the jobs of the filter it applies to now
	BulkLimit int
	Fields    url.Values // the form's hidden fields besides csrf and action
	Back      string
}

// confirm serves GET /confirm?action=NAME&job=ID (or the filter's
// state=&queue=&kind=): the confirmation page of an action. Nothing
// changes until its form is posted.
func (h *Handler) confirm(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a := actionNamed(q.Get("action"))
	if a == nil {
		h.render(w, r, http.StatusBadRequest, "error", &errorPage{Title: "Invalid request",
			Message: fmt.Sprintf("%q is not an action: want retry, cancel or delete.", q.Get("action"))})
		return
	}
	t, err := targetOf(q)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := &confirmPage{Action: a, Target: t, BulkLimit: bulkLimit, Fields: t.values(), Back: t.back(a)}
	if t.JobID > 0 {
		if p.Job, _, err = h.c.GetJob(r.Context(), t.JobID); err != nil {
			h.notFoundOr(w, r, err)
			return
		}
		p.Back = "/jobs/" + strconv.FormatInt(t.JobID, 10)
	} else {
		ids, err := h.ids(r.Context(), a, t)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		p.Count = len(ids)
	}
	h.render(w, r, http.StatusOK, "confirm", p)
}

// resultPage is the data of the page an action answers with.
type resultPage struct {
	Chrome
	Action  *action
	Target  target
	Done    []int64
	Skipped []string // jobs in a state the action does not apply to (now)
	Failed  []string
	Back    string
}

// act serves POST /act: it checks the session's CSRF token, runs the
// action on its target (at most bulkLimit jobs), logs what it did and
// shows the result.
func (h *Handler) act(w http.ResponseWriter, r *http.Request) {
	if !sessionOf(r).checkCSRF(r) {
		h.log.Warn("dashboard action refused: missing or wrong CSRF token", "remote", r.RemoteAddr)
		h.render(w, r, http.StatusForbidden, "error", &errorPage{Title: "Refused",
			Message: "The form did not carry this session's token. Open the page again and retry."})
		return
	}
	a := actionNamed(r.PostFormValue("action"))
	t, err := targetOf(r.PostForm)
	if a == nil || err != nil {
		h.render(w, r, http.StatusBadRequest, "error", &errorPage{Title: "Invalid request",
			Message: "The form names no known action or job."})
		return
	}
	ids, err := h.ids(r.Context(), a, t)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := &resultPage{Action: a, Target: t, Back: t.back(a)}
	for _, id := range ids {
		err := a.do(r.Context(), h.c, id)
		var se *fenced.JobStateError
		switch {
		case err == nil:
			p.Done = append(p.Done, id)
		case errors.As(err, &se):
			p.Skipped = append(p.Skipped, fmt.Sprintf("#%d is %s", id, se.State))
		case errors.Is(err, fenced.ErrNotFound):
			p.Skipped = append(p.Skipped, fmt.Sprintf("#%d no longer exists", id))
		default:
			p.Failed = append(p.Failed, fmt.Sprintf("#%d: %v", id, err))
		}
	}
	attrs := []any{"action", a.Name, "done", len(p.Done), "skipped", len(p.Skipped), "failed", len(p.Failed),
		"remote", r.RemoteAddr}
	if t.JobID > 0 {
		attrs = append(attrs, "job", t.JobID)
	} else {
		attrs = append(attrs, "filter", t.Filter.String(), "matched", len(ids), "jobs", p.Done)
	}
	if len(p.Failed) > 0 {
		attrs = append(attrs, "first_error", p.Failed[0])
	}
	h.log.Info("dashboard action", attrs...)
	status := http.StatusOK
	if t.JobID > 0 && len(p.Done) == 0 {
		status = http.StatusConflict
		if len(p.Failed) > 0 {
			status = http.StatusInternalServerError
		}
	}
	h.render(w, r, status, "result", p)
}

// notFoundOr renders a missing job as 404 and any other error as fail does.
func (h *Handler) notFoundOr(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, fenced.ErrNotFound) {
		h.render(w, r, http.StatusNotFound, "error", &errorPage{Title: "Not found", Message: err.Error()})
		return
	}
	h.fail(w, r, err)
}
