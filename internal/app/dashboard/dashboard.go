// Package dashboard is fenced's HTML dashboard: a server-rendered overview
// of queues, overdue running jobs, failures, leases and stale writes
// rejected; a job browser (by state, queue and kind, newest first, paged
// by id); a page per job with its attempt history; the workflows, each
// with its tasks and its graph drawn as SVG; and actions on jobs (retry,
// cancel, delete, one job or every job matching a filter), on queues
// (pause, resume) and on workflows (cancel, retry), each confirmed on a
// page of its own and posted as a plain form. It uses
// html/template (so every value is escaped) and no JavaScript.
//
// It is mounted by internal/app/server as Config.Dashboard for every path
// outside /v1/, /healthz and /metrics. Without tokens the server admits
// loopback clients only, and every browser gets a session at its first
// page. With tokens (Options.CheckToken), a browser logs in at /login
// with one and gets a session cookie (session.go); every POST carries the
// session's CSRF token, and the server refuses cross-origin POSTs
// (Origin, Sec-Fetch-Site) before they get here.
package dashboard

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/fenced/fenced"
	"github.com/prometheus/client_golang/prometheus"
)

// RefreshSeconds is how often a page reloads itself.
const RefreshSeconds = 5

//go:embed templates/*.html
var files embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"when":        when,
	"rel":         rel,
	"refresh":     func() int { return RefreshSeconds },
	"failedAt":    failedAt,
	"pretty":      pretty,
	"scanLimit":   func() int { return scanLimit },
	"meta":        func(title string, refresh bool) headData { return headData{title, refresh} },
	"took":        took,
	"rollupGrace": func() time.Duration { return fenced.RollupGrace },
}).ParseFS(files, "templates/*.html"))

// Options configure a Handler. The zero value fits a server without
// tokens.
type Options struct {
	// CheckToken, when set, makes the dashboard ask for a token at /login
	// and checks the token r presents (server.CheckToken: within the
	// server's bounds of guessing, then in constant time): ok when it is
	// one of the server's; retry > 0 (whole seconds) when r's client may
	// not present one for that long (the token was not checked). Nil: no
	// login.
	CheckToken func(r *http.Request, token string) (ok bool, retry time.Duration)
	// Secure reports whether r reached the server over TLS
	// (server.RequestSecure), which marks the session cookie Secure.
	// Default: r.TLS != nil.
	Secure func(r *http.Request) bool
	// SessionTTL is how long a session lasts. Default DefaultSessionTTL.
	SessionTTL time.Duration
	// Logger gets a line per action and per login (never a token or a
	// session id). Default: discarded.
	Logger *slog.Logger
	// Now is the clock of session expiry. Default time.Now.
	Now func() time.Time
	// StaleMinutes gives the server's stale refusals by minute (the
	// server's StaleMinutes), for a chart. Nil: no such chart.
	StaleMinutes func() map[time.Time]int64
	// NoMaintenance says the server runs no job maintenance (fenced serve
	// --no-maintenance): the panel of jobs running past their lease then
	// says that this server will not recover them, and what will. Default
	// false: the server runs it.
	NoMaintenance bool
}

// Handler serves the dashboard.
type Handler struct {
	c      *fenced.Client
	g      prometheus.Gatherer
	o      Options
	log    *slog.Logger
	sess   *sessions
	mux    *http.ServeMux
	noJobs error // nil, or why the backend has no job pages (fenced.CapJobs)
	// noWorkflows is nil, or why the backend has no workflow pages
	// (fenced.CapWorkflows).
	noWorkflows error
}

// New returns the dashboard over c; g gives the server's metrics, read for
// fenced_stale_writes_total (nil shows no count).
func New(c *fenced.Client, g prometheus.Gatherer, o Options) *Handler {
	if o.SessionTTL <= 0 {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Secure == nil {
		o.Secure = func(r *http.Request) bool { return r.TLS != nil }
	}
	h := &Handler{c: c, g: g, o: o, log: o.Logger, sess: newSessions(o.SessionTTL, o.Now, o.Secure), mux: http.NewServeMux(),
		noJobs: c.Unsupported(fenced.CapJobs), noWorkflows: c.Unsupported(fenced.CapWorkflows)}
	h.mux.HandleFunc("GET /{$}", h.overview)
	h.mux.HandleFunc("GET /charts", h.charts)
	// The job pages and the actions (on jobs and queues), or, on a backend
	// without the job queue, its error in their place.
	jobPages := map[string]http.HandlerFunc{"GET /jobs": h.jobs, "GET /jobs/{id}": h.job, "GET /confirm": h.confirm, "POST /act": h.act}
	for pattern, page := range jobPages {
		if h.noJobs != nil {
			page = func(w http.ResponseWriter, r *http.Request) { h.fail(w, r, h.noJobs) }
		}
		h.mux.HandleFunc(pattern, page)
	}
	// The workflow pages and actions, or the error of the job queue or of
	// the workflows, whichever the backend lacks, in their place.
	workflowPages := map[string]http.HandlerFunc{"GET /workflows": h.workflows, "GET /workflows/{id}": h.workflow,
		"GET /workflows/{id}/confirm": h.workflowConfirm, "POST /workflows/{id}/act": h.workflowAct}
	for pattern, page := range workflowPages {
		if missing := cmp.Or(h.noJobs, h.noWorkflows); missing != nil {
			page = func(w http.ResponseWriter, r *http.Request) { h.fail(w, r, missing) }
		}
		h.mux.HandleFunc(pattern, page)
	}
	h.mux.HandleFunc("GET /login", h.loginPage)
	h.mux.HandleFunc("POST /login", h.login)
	h.mux.HandleFunc("POST /logout", h.logout)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.render(w, r, http.StatusNotFound, "error", &errorPage{Title: "Not found",
			Message: fmt.Sprintf("There is no page at %s.", r.URL.Path)})
	})
	return h
}

// ServeHTTP implements http.Handler: it finds the browser's session (or
// sends it to log in), then routes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/login" {
		h.mux.ServeHTTP(w, r)
		return
	}
	sess := h.sess.get(r)
	safe := r.Method == http.MethodGet || r.Method == http.MethodHead
	switch {
	case sess != nil:
	case h.o.CheckToken != nil && safe:
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	case h.o.CheckToken != nil || !safe:
		h.render(w, r, http.StatusForbidden, "error", &errorPage{Title: "Not logged in",
			Message: "This browser has no session, or it expired. Open the page again (and log in) before acting."})
		return
	default: // no tokens: every loopback browser gets a session for its forms
		sess = h.sess.create(w, r)
	}
	h.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess)))
}

// sessionKey is the context key of the request's *session.
type sessionKey struct{}

func sessionOf(r *http.Request) *session {
	s, _ := r.Context().Value(sessionKey{}).(*session)
	return s
}

func (h *Handler) overview(w http.ResponseWriter, r *http.Request) {
	o, err := h.load(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	o.Clock = clock(o.Now, true)
	h.render(w, r, http.StatusOK, "overview", o)
}

// jobPage is the data of /jobs/{id}.
type jobPage struct {
	Chrome
	Now      time.Time
	Job      *fenced.Job
	Attempts []fenced.JobAttempt
	Actions  []*action // what can be done to the job in its state
}

func (h *Handler) job(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		h.render(w, r, http.StatusNotFound, "error", &errorPage{Title: "Not found",
			Message: fmt.Sprintf("%q is not a job id.", r.PathValue("id"))})
		return
	}
	j, attempts, err := h.c.GetJob(r.Context(), id)
	if errors.Is(err, fenced.ErrNotFound) {
		h.render(w, r, http.StatusNotFound, "error", &errorPage{Title: "Not found",
			Message: fmt.Sprintf("There is no job %d.", id)})
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := &jobPage{Now: j.DecidedAt, Job: j, Attempts: attempts, Actions: actionsFor(j)}
	p.Clock = clock(p.Now, true)
	h.render(w, r, http.StatusOK, "job", p)
}

// errorPage is the data of a page that explains a failure.
type errorPage struct {
	Chrome
	Title, Message string
}

// headData is the data of the "head" template: the title, and whether
// the page reloads itself every RefreshSeconds.
type headData struct {
	Title   string
	Refresh bool
}

// Chrome is what the header of every page shows: the clock line, and a
// logout button (with the session's CSRF token) for a logged-in browser.
// render fills CSRF and Logout.
type Chrome struct {
	Clock  string
	CSRF   string
	Logout bool
}

func (c *Chrome) setChrome(csrf string, logout bool) { c.CSRF, c.Logout = csrf, logout }

// page is data every page template takes: it embeds Chrome.
type page interface {
	setChrome(csrf string, logout bool)
}

// clock is the header's clock line.
func clock(now time.Time, refresh bool) string {
	s := "database time " + when(now)
	if refresh {
		s += fmt.Sprintf(" · refreshes every %ds", RefreshSeconds)
	}
	return s
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, title := http.StatusInternalServerError, "Database error"
	switch {
	case errors.Is(err, fenced.ErrInvalid):
		status, title = http.StatusBadRequest, "Invalid request"
	case errors.Is(err, fenced.ErrJobsNotSupported):
		status, title = http.StatusNotImplemented, "No job queue"
	case errors.Is(err, fenced.ErrWorkflowsNotSupported):
		status, title = http.StatusNotImplemented, "No workflows"
	}
	h.render(w, r, status, "error", &errorPage{Title: title, Message: err.Error()})
}

func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, data page) {
	if sess := sessionOf(r); sess != nil {
		data.setChrome(sess.csrf, h.o.CheckToken != nil)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// No scripts, no frames, nothing from elsewhere; forms post here only.
	w.Header().Set("Content-Security-Policy",
		"default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	pages.ExecuteTemplate(w, name, data) // a write error means the client left
}

// pretty indents a JSON document for reading, with <, > and & as
// themselves (the template escapes them); what does not parse is shown
// as it is.
func pretty(raw json.RawMessage) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // large integers stay exact
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// when formats a database time for people: UTC to the second.
func when(t any) string {
	switch t := t.(type) {
	case time.Time:
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05") + " UTC"
	case *time.Time:
		if t == nil {
			return "—"
		}
		return when(*t)
	}
	return ""
}

// rel says how far t is from now: "in 12s", "3m ago".
func rel(now time.Time, t any) string {
	var at time.Time
	switch t := t.(type) {
	case time.Time:
		at = t
	case *time.Time:
		if t == nil {
			return ""
		}
		at = *t
	}
	if at.IsZero() || now.IsZero() {
		return ""
	}
	d := at.Sub(now)
	if d >= 0 {
		return "in " + short(d)
	}
	return short(-d) + " ago"
}

// short rounds d to its largest unit: 850ms, 12s, 3m, 5h, 2d.
func short(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// took is how long an attempt ran: to its end, or to now while it runs.
func took(now time.Time, a fenced.JobAttempt) string {
	end := now
	if a.EndedAt != nil {
		end = *a.EndedAt
	}
	if end.IsZero() || end.Before(a.StartedAt) {
		return ""
	}
	return short(end.Sub(a.StartedAt))
}
