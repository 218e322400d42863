// Package dashboard is fenced's HTML dashboard: one server-rendered page of
// queues, overdue running jobs, failures, leases and stale writes rejected,
// and a page per job with its attempt history. It uses html/template (so
// every value is escaped), no JavaScript, and a meta refresh.
//
// It is mounted by internal/server as Config.Dashboard, behind the server's
// authentication, for every path outside /v1/, /healthz and /metrics.
package dashboard

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
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
	"when":      when,
	"rel":       rel,
	"refresh":   func() int { return RefreshSeconds },
	"failedAt":  failedAt,
	"pretty":    pretty,
	"scanLimit": func() int { return scanLimit },
}).ParseFS(files, "templates/*.html"))

// Handler serves the dashboard.
type Handler struct {
	c   *fenced.Client
	g   prometheus.Gatherer
	mux *http.ServeMux
}

// New returns the dashboard over c; g gives the server's metrics, read for
// fenced_stale_writes_total (nil shows no count).
func New(c *fenced.Client, g prometheus.Gatherer) *Handler {
	h := &Handler{c: c, g: g, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /{$}", h.overview)
	h.mux.HandleFunc("GET /jobs/{id}", h.job)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.render(w, http.StatusNotFound, "error", errorPage{Title: "Not found",
			Message: fmt.Sprintf("There is no page at %s.", r.URL.Path)})
	})
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *Handler) overview(w http.ResponseWriter, r *http.Request) {
	o, err := h.load(r.Context())
	if err != nil {
		h.fail(w, err)
		return
	}
	h.render(w, http.StatusOK, "overview", o)
}

// jobPage is the data of /jobs/{id}.
type jobPage struct {
	Now      time.Time
	Job      *fenced.Job
	Attempts []fenced.JobAttempt
}

func (h *Handler) job(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		h.render(w, http.StatusNotFound, "error", errorPage{Title: "Not found",
			Message: fmt.Sprintf("%q is not a job id.", r.PathValue("id"))})
		return
	}
	j, attempts, err := h.c.GetJob(r.Context(), id)
	if errors.Is(err, fenced.ErrNotFound) {
		h.render(w, http.StatusNotFound, "error", errorPage{Title: "Not found",
			Message: fmt.Sprintf("There is no job %d.", id)})
		return
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	h.render(w, http.StatusOK, "job", jobPage{Now: j.DecidedAt, Job: j, Attempts: attempts})
}

// errorPage is the data of a page that explains a failure.
type errorPage struct {
	Title, Message string
}

func (h *Handler) fail(w http.ResponseWriter, err error) {
	h.render(w, http.StatusInternalServerError, "error", errorPage{Title: "Database error",
		Message: err.Error()})
}

func (h *Handler) render(w http.ResponseWriter, status int, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// No scripts, no frames, nothing from elsewhere.
	w.Header().Set("Content-Security-Policy",
		"default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
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
