package dashboard

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fenced/fenced"
)

// pageSize is how many jobs a page of the job browser shows.
const pageSize = 50

// listFilter is the job browser's filter, as the query string gives it:
// ?state=&queue=&kind=&tag= (empty: any; tag: the jobs carrying it).
type listFilter struct {
	State, Queue, Kind, Tag string
}

// filterOf reads the filter of a query string or a posted form.
func filterOf(v url.Values) listFilter {
	return listFilter{State: strings.TrimSpace(v.Get("state")), Queue: strings.TrimSpace(v.Get("queue")),
		Kind: strings.TrimSpace(v.Get("kind")), Tag: strings.TrimSpace(v.Get("tag"))}
}

// Any reports whether the filter selects every job.
func (f listFilter) Any() bool { return f == listFilter{} }

// values is the filter as query parameters, with extra name/value pairs.
func (f listFilter) values(extra ...string) url.Values {
	v := url.Values{}
	for _, p := range [][2]string{{"state", f.State}, {"queue", f.Queue}, {"kind", f.Kind}, {"tag", f.Tag}} {
		if p[1] != "" {
			v.Set(p[0], p[1])
		}
	}
	for i := 0; i+1 < len(extra); i += 2 {
		v.Set(extra[i], extra[i+1])
	}
	return v
}

// Query is the filter as a query string ("" for every job), with extra
// name/value pairs: a template.URL, as url.Values.Encode escapes it, so
// that the template does not escape its = and & again.
func (f listFilter) Query(extra ...string) template.URL {
	return template.URL(f.values(extra...).Encode())
}

// String describes the filter for people and the log.
func (f listFilter) String() string {
	if f.Any() {
		return "every job"
	}
	var parts []string
	for _, p := range [][2]string{{"state", f.State}, {"queue", f.Queue}, {"kind", f.Kind}, {"tag", f.Tag}} {
		if p[1] != "" {
			parts = append(parts, p[0]+"="+p[1])
		}
	}
	return strings.Join(parts, " ")
}

// jobFilter is the library's filter of f.
func (f listFilter) jobFilter() fenced.JobFilter {
	jf := fenced.JobFilter{State: fenced.JobState(f.State), Queue: f.Queue, Kind: f.Kind}
	if f.Tag != "" {
		jf.Tags = []string{f.Tag}
	}
	return jf
}

// jobsPage is the data of /jobs.
type jobsPage struct {
	Chrome
	Now    time.Time
	Filter listFilter
	States []fenced.JobState
	Jobs   []*fenced.Job
	// Newer and Older are the query strings of the adjacent pages, ""
	// when there is none.
	Newer, Older template.URL
	Actions      []*action // the bulk actions
	BulkLimit    int
	// Queue is the filter's queue, whether it is paused and its button;
	// nil without a queue filter or on a backend without jobs.
	Queue *queueState
}

// jumpToID answers a list page's ?id= (a number, # allowed) with a
// redirect to the page of that id under prefix, or its error; it reports
// whether it answered.
func (h *Handler) jumpToID(w http.ResponseWriter, r *http.Request, prefix string) bool {
	s := strings.TrimSpace(r.URL.Query().Get("id"))
	if s == "" {
		return false
	}
	id, err := fenced.ParseJobID(strings.TrimPrefix(s, "#"))
	if err != nil {
		h.fail(w, r, err)
		return true
	}
	http.Redirect(w, r, prefix+strconv.FormatInt(id, 10), http.StatusSeeOther)
	return true
}

// jobs serves /jobs: the jobs matching the filter, newest first, a page
// at a time. Pages are keyset pages: ?before=ID shows the pageSize jobs
// just older than ID, ?after=ID the pageSize just newer, so jobs enqueued
// or deleted meanwhile neither shift nor repeat a page. ?id=N opens job N.
func (h *Handler) jobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if h.jumpToID(w, r, "/jobs/") {
		return
	}
	p := &jobsPage{Filter: filterOf(q), States: states, Actions: bulkActions(), BulkLimit: bulkLimit}
	before, err1 := idParam(q, "before")
	after, err2 := idParam(q, "after")
	if err := errors.Join(err1, err2); err != nil {
		h.fail(w, r, err)
		return
	}
	var err error
	p.Jobs, p.Newer, p.Older, err = h.page(r.Context(), p.Filter, before, after)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if p.Filter.Queue != "" {
		paused, err := h.pauses(r.Context())
		if err != nil {
			h.fail(w, r, err)
			return
		}
		pause := paused[p.Filter.Queue]
		p.Queue = &queueState{Queue: p.Filter.Queue, Pause: pause, Action: queueActionFor(pause != nil)}
	}
	if p.Now, err = h.c.DatabaseTime(r.Context()); err == nil {
		p.Clock = clock(p.Now, false)
	}
	h.render(w, r, http.StatusOK, "jobs", p)
}

// page reads one page of f newest first: the first page, the one older
// than before, or the one newer than after. Each is one list statement
// of pageSize+1 rows (the extra row says whether there is another page).
func (h *Handler) page(ctx context.Context, f listFilter, before, after int64) (jobs []*fenced.Job, newer, older template.URL, err error) {
	jf := f.jobFilter()
	jf.Limit = pageSize + 1
	if after > 0 {
		jf.AfterID = after
		if jobs, err = h.c.ListJobs(ctx, jf); err != nil {
			return nil, "", "", err
		}
		if len(jobs) <= pageSize {
			// The newest jobs: show the first page, full.
			return h.page(ctx, f, 0, 0)
		}
		jobs = jobs[:pageSize]
		slices.Reverse(jobs)
		return jobs, f.Query("after", strconv.FormatInt(jobs[0].ID, 10)),
			f.Query("before", strconv.FormatInt(jobs[len(jobs)-1].ID, 10)), nil
	}
	jf.Desc, jf.BeforeID = true, before
	if jobs, err = h.c.ListJobs(ctx, jf); err != nil {
		return nil, "", "", err
	}
	more := len(jobs) > pageSize
	jobs = jobs[:min(len(jobs), pageSize)]
	if before > 0 && len(jobs) > 0 {
		newer = f.Query("after", strconv.FormatInt(jobs[0].ID, 10))
	} else if before > 0 {
		newer = f.Query()
	}
	if more {
		older = f.Query("before", strconv.FormatInt(jobs[len(jobs)-1].ID, 10))
	}
	return jobs, newer, older, nil
}

// idParam reads a positive id parameter; absent is 0.
func idParam(q url.Values, name string) (int64, error) {
	s := q.Get(name)
	if s == "" {
		return 0, nil
	}
	return fenced.ParseJobID(s)
}
