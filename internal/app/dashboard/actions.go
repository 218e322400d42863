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

// action is one thing a person can do to a job, or to a queue, from the
// dashboard.
//
// Queue actions (pause and resume) are not job actions: they take a queue,
// not job ids, and get their own table (queueActions) and their own
// buttons, in the "queue-actions" block of the jobs page and the
// overview's queue table. They share the confirmation page, the CSRF
// check and the log line of /act.
type action struct {
	Name      string            // in forms and the log: retry, cancel, delete, pause, resume
	Verb      string            // the button: Retry
	Done      string            // the result: retried
	Unchanged string            // a queue action's result when it changed nothing
	States    []fenced.JobState // the states it applies to; nil: every state
	Explain   string            // what it does, on the confirmation page
	Danger    bool              // it cannot be undone
	do        func(ctx context.Context, c *fenced.Client, id int64) error
	// doQueue, set for a queue action, acts on a queue and reports whether
	// it changed it.
	doQueue func(ctx context.Context, c *fenced.Client, queue string) (bool, error)
}

var actions = []*action{
	{Name: "retry", Verb: "Retry", Done: "retried", States: []fenced.JobState{fenced.JobFailed, fenced.JobCancelled},
		Explain: "puts a failed or cancelled job back to queued, to run now, with as many attempts again as it had.",
		do: func(ctx context.Context, c *fenced.Client, id int64) error {
			_, err := c.RetryJob(ctx, id)
			return err
		}},
	{Name: "cancel", Verb: "Cancel", Done: "cancelled", States: []fenced.JobState{fenced.JobPending, fenced.JobQueued, fenced.JobRunning},
		Explain: "cancels a pending or queued job at once; a running job is asked to stop, and its worker learns it at its next heartbeat. " +
			"A workflow's task that ends cancelled cancels the tasks waiting for it, except those that run anyway.",
		do: func(ctx context.Context, c *fenced.Client, id int64) error {
			_, err := c.CancelJob(ctx, id)
			return err
		}},
	{Name: "delete", Verb: "Delete", Done: "deleted", Danger: true,
		Explain: "deletes the job and its attempt history, in any state. A running job's worker can write nothing more " +
			"for it (its next heartbeat finds no job). This cannot be undone.",
		do: func(ctx context.Context, c *fenced.Client, id int64) error { return c.DeleteJob(ctx, id) }},
}

// queueActions are the actions on a queue.
var queueActions = []*action{
	{Name: "pause", Verb: "Pause", Done: "paused", Unchanged: "was already paused",
		Explain: "stops claims from taking the queue's jobs until it is resumed: workers wait as on an empty queue. " +
			"Running jobs keep running, and jobs can still be enqueued into it.",
		doQueue: func(ctx context.Context, c *fenced.Client, queue string) (bool, error) {
			_, paused, err := c.PauseQueue(ctx, queue)
			return paused, err
		}},
	{Name: "resume", Verb: "Resume", Done: "resumed", Unchanged: "was not paused",
		Explain: "lets claims take the queue's jobs again, and wakes the workers waiting on it.",
		doQueue: func(ctx context.Context, c *fenced.Client, queue string) (bool, error) {
			return c.ResumeQueue(ctx, queue)
		}},
}

func actionNamed(name string) *action {
	for _, a := range slices.Concat(actions, queueActions) {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// ForQueue reports whether a is a queue action.
func (a *action) ForQueue() bool { return a.doQueue != nil }

// queueActionFor is the button of a queue: Resume when it is paused, else
// Pause.
func queueActionFor(paused bool) *action {
	if paused {
		return queueActions[1]
	}
	return queueActions[0]
}

// queueState is a queue, whether it is paused, and the action its button
// offers.
type queueState struct {
	Queue  string
	Pause  *fenced.QueuePause // nil: not paused
	Action *action
}

// pauses reads the paused queues in one statement.
func (h *Handler) pauses(ctx context.Context) (map[string]*fenced.QueuePause, error) {
	ps, err := h.c.ListQueuePauses(ctx)
	if err != nil {
		return nil, fmt.Errorf("list queue pauses: %w", err)
	}
	paused := make(map[string]*fenced.QueuePause, len(ps))
	for i := range ps {
		paused[ps[i].Queue] = &ps[i]
	}
	return paused, nil
}

// appliesTo reports whether a can change a job in state s.
func (a *action) appliesTo(s fenced.JobState) bool {
	return a.States == nil || slices.Contains(a.States, s)
}

// actionsFor is the actions that apply to j in its state. A workflow's
// task is never deleted alone (its workflow is, whole): it has no delete.
func actionsFor(j *fenced.Job) []*action {
	var out []*action
	for _, a := range actions {
		if a.appliesTo(j.State) && !(a.Name == "cancel" && j.CancelRequested) && !(a.Name == "delete" && j.WorkflowID != 0) {
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
	if a.ForQueue() {
		return "/jobs?" + string(listFilter{Queue: t.Filter.Queue}.Query())
	}
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
			Message: fmt.Sprintf("%q is not an action: want retry, cancel, delete, pause or resume.", q.Get("action"))})
		return
	}
	t, err := targetOf(q)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := &confirmPage{Action: a, Target: t, BulkLimit: bulkLimit, Fields: t.values(), Back: t.back(a)}
	if a.ForQueue() {
		if err := validQueueTarget(t); err != nil {
			h.fail(w, r, err)
			return
		}
		p.Fields = url.Values{"queue": {t.Filter.Queue}}
	} else if t.JobID > 0 {
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

// validQueueTarget checks the target of a queue action: a queue, and no
// job.
func validQueueTarget(t target) error {
	if t.Filter.Queue == "" || t.JobID > 0 {
		return fmt.Errorf("%w: a queue action takes a queue and no job", fenced.ErrInvalid)
	}
	return nil
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
	Changed bool // a queue action changed the queue
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
	if a.ForQueue() {
		h.actQueue(w, r, a, t)
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
		var ue *fenced.UniqueConflictError
		switch {
		case err == nil:
			p.Done = append(p.Done, id)
		case errors.As(err, &se):
			p.Skipped = append(p.Skipped, fmt.Sprintf("#%d is %s", id, se.State))
		case errors.As(err, &ue) && ue.ExistingID != 0:
			p.Skipped = append(p.Skipped, fmt.Sprintf("#%d is unique and job #%d holds its slot", id, ue.ExistingID))
		case errors.As(err, &ue):
			p.Skipped = append(p.Skipped, fmt.Sprintf("#%d is unique and another job holds its slot", id))
		case errors.Is(err, fenced.ErrNotFound):
			p.Skipped = append(p.Skipped, fmt.Sprintf("#%d no longer exists", id))
		case errors.Is(err, fenced.ErrInvalid):
			// A workflow's task: a retry of one its workflow cancelled, a
			// delete of one task alone.
			p.Skipped = append(p.Skipped, fmt.Sprintf("#%d: %v", id, err))
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

// actQueue runs a queue action for act, logs it and shows the result.
func (h *Handler) actQueue(w http.ResponseWriter, r *http.Request, a *action, t target) {
	if err := validQueueTarget(t); err != nil {
		h.fail(w, r, err)
		return
	}
	changed, err := a.doQueue(r.Context(), h.c, t.Filter.Queue)
	result := a.Done
	switch {
	case err != nil:
		result = "failed"
	case !changed:
		result = "unchanged"
	}
	attrs := []any{"action", a.Name, "queue", t.Filter.Queue, "result", result, "remote", r.RemoteAddr}
	if err != nil {
		attrs = append(attrs, "error", err.Error())
	}
	h.log.Info("dashboard action", attrs...)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "result", &resultPage{Action: a, Target: t, Back: t.back(a), Changed: changed})
}

// notFoundOr renders a missing job as 404 and any other error as fail does.
func (h *Handler) notFoundOr(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, fenced.ErrNotFound) {
		h.render(w, r, http.StatusNotFound, "error", &errorPage{Title: "Not found", Message: err.Error()})
		return
	}
	h.fail(w, r, err)
}
