// Package server is fenced's HTTP/JSON service: leases, the fenced resource
// store and the job queue under /v1, /healthz and /metrics, for workers in
// any language (docs/design.md §8).
//
// Every answer the database decided carries the database clock reading it
// was decided at, in the X-Fenced-DB-Time header (RFC 3339, nanoseconds)
// and as "db_time" in the JSON body; see dbtime.go for what it is on each
// route. Errors are JSON with a stable code (errors.go); bad input never
// yields a 500.
package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fenced/fenced"
)

// Defaults of Config.
const (
	// DefaultMaxBody fits the largest request the API takes: a resource
	// value of fenced.MaxValueBytes (1 MiB) however its JSON string is
	// escaped (at most 6 bytes a byte, a control character as \u0001),
	// with the rest of its request, and job args or output of
	// fenced.MaxArgsBytes, which travel as the JSON they are.
	DefaultMaxBody   = 8 << 20
	DefaultMaxWait   = 30 * time.Second
	DefaultPollEvery = 100 * time.Millisecond
	// DefaultPollMax is the longest interval between the polls of an idle
	// queue's waiting claims (see claimpoll.go).
	DefaultPollMax = 2 * time.Second
	// DefaultMaxWaiters is how many claims may wait at once.
	DefaultMaxWaiters = 1000
	// notifiedPollEvery is the poll of a waiting claim when the backend
	// wakes it on enqueue: only jobs that become due with time (scheduled,
	// retried, recovered) are found by polling then.
	notifiedPollEvery = time.Second
)

// Config tunes a Server. The zero value works: no tokens (loopback only),
// bodies up to DefaultMaxBody (8 MiB), claims wait at most 30s, no
// maintenance.
type Config struct {
	// Tokens are the bearer tokens accepted. Empty means no authentication;
	// then only loopback clients naming a loopback host are served (and the
	// listener must be loopback: see CheckListen). Default none.
	Tokens []string
	// MaxBody bounds a request body in bytes; larger gets 413. Default
	// DefaultMaxBody (8 MiB), which fits a value of the largest size however
	// it is escaped; a smaller limit refuses some values the library takes.
	MaxBody int64
	// MaxWait caps the wait_ms of a claim (the long-poll). Default
	// DefaultMaxWait (30s).
	MaxWait time.Duration
	// PollEvery is the first interval between the polls of a queue's
	// waiting claims, which find the jobs nothing wakes them for (enqueued
	// by another process on a backend that does not notify, falling due).
	// The claims of one queue and kinds share one poll; each poll that
	// finds nothing doubles the interval, up to PollMax, and one that finds
	// jobs (or a woken claim that does) starts it again. Default
	// DefaultPollEvery (100ms), or 1s on a backend that wakes claims on
	// enqueue (PostgreSQL LISTEN/NOTIFY).
	PollEvery time.Duration
	// PollMax is the longest interval between polls. Default
	// DefaultPollMax (2s), and never below PollEvery.
	PollMax time.Duration
	// MaxWaiters caps the claims waiting at once (the long-polls): a claim
	// that found nothing and would wait beyond it is answered 503
	// too_many_waiters with Retry-After: 1. A claim without wait_ms is
	// never refused. Default DefaultMaxWaiters (1000).
	MaxWaiters int
	// Maintenance, when set, runs the job queue's maintenance (recovery of
	// expired work, retention, periodic jobs) while the server is open;
	// its rounds are counted in /metrics. Default none.
	Maintenance *fenced.MaintenanceConfig
	// Logger gets one line per request (method, route, status, duration)
	// and the server's errors. Tokens and headers are never logged.
	// Default: discarded.
	Logger *slog.Logger
	// Redact rewrites the text of an error before it is logged (the
	// command removes the database password). Default: unchanged.
	Redact func(string) string
	// Dashboard, when set, serves every path outside /v1/, /healthz and
	// /metrics (the HTML dashboard at /), behind the same authentication
	// and logging. Default: those paths are a JSON 404.
	Dashboard http.Handler
	// BehindTLSProxy says the server is reached only through a proxy that
	// terminates TLS and appends the client's address to X-Forwarded-For:
	// the client address of a request is then the proxy's last
	// X-Forwarded-For entry (proxy.go), and RequestSecure is true unless
	// the proxy says X-Forwarded-Proto: http. Only set it when no one but
	// the proxy can connect: a client that can forwards what it likes.
	// Default false: headers are not trusted.
	BehindTLSProxy bool
	// Now is the clock of the token throttle (tokenlimit.go). Default
	// time.Now.
	Now func() time.Time
	// MaxMetricQueues bounds the queues each metric labelled by queue
	// names; the others are summed under queue="_other" (metricsqueues.go).
	// Default DefaultMaxMetricQueues (1000).
	MaxMetricQueues int
	// DashboardLogin, with tokens, leaves the authentication of dashboard
	// paths to the dashboard: it admits a browser by its own login page
	// and session cookie (checking the token with CheckToken). The API
	// keeps the bearer check. Without tokens it changes nothing: the
	// dashboard is served to loopback clients only, as the API. Default
	// false: a dashboard path needs the bearer token too.
	DashboardLogin bool
}

// Server is the HTTP handler of the service. Create it with New; Close it
// to end waiting claims and stop its background work.
type Server struct {
	c       *fenced.Client
	cfg     Config
	api     *http.ServeMux
	auth    *auth
	guesses *guessLimiter // bounds the tokens presented (tokenlimit.go)
	cop     *http.CrossOriginProtection
	metrics *metrics
	log     *slog.Logger
	// staleMinutes counts stale refusals by minute (StaleMinutes).
	staleMinutes minuteCounts

	polls   *pollGroups  // the poll schedules of waiting claims
	waiters atomic.Int64 // claims waiting now, at most cfg.MaxWaiters

	closing   chan struct{} // closed by Close: waiting claims return
	closeOnce sync.Once
	stopBg    context.CancelFunc
	maint     *fenced.Maintainer
}

// New returns the service over c. It starts the backend's job listener
// (PostgreSQL) and, if configured, the maintenance; Close stops them.
func New(c *fenced.Client, cfg Config) (*Server, error) {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultMaxWait
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxMetricQueues <= 0 {
		cfg.MaxMetricQueues = DefaultMaxMetricQueues
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Redact == nil {
		cfg.Redact = func(s string) string { return s }
	}
	a, err := newAuth(cfg.Tokens)
	if err != nil {
		return nil, err
	}
	s := &Server{c: c, cfg: cfg, auth: a, guesses: newGuessLimiter(cfg.Now), cop: http.NewCrossOriginProtection(),
		metrics: newMetrics(c, cfg.MaxMetricQueues), log: cfg.Logger, closing: make(chan struct{})}
	s.api = s.routes()

	ctx, stop := context.WithCancel(context.Background())
	release := c.ListenForJobs() // enqueues anywhere wake long polls
	s.stopBg = func() { stop(); release() }
	if c.NotifiesEnqueues() && s.cfg.PollEvery <= 0 {
		s.cfg.PollEvery = notifiedPollEvery
	}
	if s.cfg.PollEvery <= 0 {
		s.cfg.PollEvery = DefaultPollEvery
	}
	if s.cfg.PollMax <= 0 {
		s.cfg.PollMax = DefaultPollMax
	}
	s.cfg.PollMax = max(s.cfg.PollMax, s.cfg.PollEvery)
	if s.cfg.MaxWaiters <= 0 {
		s.cfg.MaxWaiters = DefaultMaxWaiters
	}
	s.polls = newPollGroups(s.cfg.PollEvery, s.cfg.PollMax)
	if cfg.Maintenance != nil {
		mc := *cfg.Maintenance
		if mc.Logger == nil {
			mc.Logger = s.log
		}
		next := mc.OnRound
		mc.OnRound = func(r fenced.MaintenanceRound) {
			s.metrics.recovered.Add(float64(r.Recovered))
			if next != nil {
				next(r)
			}
		}
		if s.maint, err = c.StartMaintenance(ctx, mc); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Close makes waiting claims return at once (with what they have: no jobs)
// and stops the maintenance (which releases its lease). Requests in flight
// finish; call it before http.Server.Shutdown. The Client, with its job
// listener, stays open: its owner closes it.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		if s.maint != nil {
			s.maint.Stop()
		}
		s.stopBg()
	})
}

// Client is the fenced client the server works on (for the dashboard).
func (s *Server) Client() *fenced.Client { return s.c }

// ServeHTTP implements http.Handler: take the client's address from the
// proxy when behind one, log and measure, authenticate, then route.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	r = s.forwarded(r)
	rec := &recorder{ResponseWriter: w}
	route, h := s.route(r)
	defer func() { s.observe(r, rec, route, time.Since(start)) }()

	if !openRoute(route) && !s.dashboardLogin(route) {
		if e := s.authorize(r); e != nil {
			s.writeError(rec, r, e)
			return
		}
	}
	if err := s.cop.Check(r); err != nil {
		s.writeError(rec, r, forbidden("cross-origin request refused: "+err.Error()))
		return
	}
	r.Body = http.MaxBytesReader(rec, r.Body, s.cfg.MaxBody)
	h.ServeHTTP(rec, r)
}

// dashboardLogin reports whether route is left to the dashboard's own
// login: a dashboard path, with tokens and Config.DashboardLogin.
func (s *Server) dashboardLogin(route string) bool {
	return route == routeDashboard && s.cfg.DashboardLogin && s.auth.enabled()
}

// Routes served without authentication (openRoute), and route labels
// that are not patterns.
const (
	routeHealth    = "GET /healthz"
	routeOpenAPI   = "GET /v1/openapi.json"
	routeAPIPage   = "GET /v1/openapi.html"
	routeDashboard = "dashboard"
	routeUnmatched = "unmatched"
)

// openRoute reports whether a route is served without a token and from
// any client: the health check, which load balancers probe without
// credentials, and the OpenAPI document and its page, which describe the
// API and hold nothing that is not in the public documentation. None
// changes anything.
func openRoute(route string) bool {
	return route == routeHealth || route == routeOpenAPI || route == routeAPIPage
}

// route finds the handler of r and the label its logs and metrics carry:
// the ServeMux pattern, "dashboard", or "unmatched" (never the raw path, so
// the label's values stay few).
func (s *Server) route(r *http.Request) (string, http.Handler) {
	p := r.URL.Path
	if p != "/healthz" && p != "/metrics" && !strings.HasPrefix(p, "/v1/") && p != "/v1" {
		if s.cfg.Dashboard != nil {
			return routeDashboard, s.cfg.Dashboard
		}
		return routeUnmatched, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.writeError(w, r, notFoundRoute(r))
		})
	}
	h, pattern := s.api.Handler(r)
	if pattern == "" {
		return routeUnmatched, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.unmatched(w, r, h)
		})
	}
	return pattern, s.api
}

// unmatched answers a request no route takes as JSON: 405 with Allow when
// the path exists for other methods, else 404. h is the ServeMux's own
// answer, run into a recorder to learn which it is.
func (s *Server) unmatched(w http.ResponseWriter, r *http.Request, h http.Handler) {
	probe := &headerProbe{header: http.Header{}}
	h.ServeHTTP(probe, r)
	if probe.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", probe.header.Get("Allow"))
		s.writeError(w, r, newError(http.StatusMethodNotAllowed, codeMethodNotAllowed,
			r.Method+" is not allowed on "+r.URL.Path+"; allowed: "+probe.header.Get("Allow")))
		return
	}
	s.writeError(w, r, notFoundRoute(r))
}

// headerProbe is a ResponseWriter that keeps only the status and headers.
type headerProbe struct {
	header http.Header
	status int
}

func (p *headerProbe) Header() http.Header         { return p.header }
func (p *headerProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *headerProbe) WriteHeader(code int)        { p.status = code }

// stamped sets X-Fenced-DB-Time on h's answers to a reading taken before h
// runs (for /metrics, whose job counts are read right after).
func (s *Server) stamped(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t := s.dbNow(r.Context()); !t.IsZero() {
			w.Header().Set(HeaderDBTime, formatDBTime(t))
		}
		h.ServeHTTP(w, r)
	})
}

// apiRoute is one route of the API: its ServeMux pattern (also its metric
// label and, as "METHOD PATH", an operation of the OpenAPI document), the
// function that answers it, whether it reads a query string (every other
// route refuses one), and the capability of the backend it needs, if any
// (on a backend without it the route answers 501 not_supported).
type apiRoute struct {
	pattern string
	h       func(*Server, *http.Request) (*reply, error)
	query   bool
	needs   fenced.Capability
}

// apiRoutes is every route routes registers besides GET /metrics (a
// Prometheus handler, not JSON): the one list the ServeMux and the test of
// the OpenAPI document (openapi_test.go) both read.
var apiRoutes = []apiRoute{
	{pattern: routeHealth, h: (*Server).health, query: true},
	{pattern: routeOpenAPI, h: (*Server).openAPI},

	{pattern: "POST /v1/leases/{name}/acquire", h: (*Server).acquire},
	{pattern: "POST /v1/leases/{name}/renew", h: (*Server).renew},
	{pattern: "POST /v1/leases/{name}/release", h: (*Server).release},
	{pattern: "GET /v1/leases/{name}", h: (*Server).getLease},
	{pattern: "GET /v1/leases", h: (*Server).listLeases},

	{pattern: "POST /v1/semaphores/{name}/acquire", h: (*Server).acquireSlot, needs: fenced.CapSemaphores},
	{pattern: "POST /v1/semaphores/{name}/renew", h: (*Server).renewSlot, needs: fenced.CapSemaphores},
	{pattern: "POST /v1/semaphores/{name}/release", h: (*Server).releaseSlot, needs: fenced.CapSemaphores},
	{pattern: "GET /v1/semaphores/{name}", h: (*Server).getSemaphore, needs: fenced.CapSemaphores},
	{pattern: "GET /v1/semaphores", h: (*Server).listSemaphores, needs: fenced.CapSemaphores},

	{pattern: "PUT /v1/resources/{key}", h: (*Server).putResource},
	{pattern: "GET /v1/resources/{key}", h: (*Server).getResource},

	{pattern: "POST /v1/jobs", h: (*Server).enqueue, needs: fenced.CapJobs},
	{pattern: "GET /v1/jobs", h: (*Server).listJobs, query: true, needs: fenced.CapJobs},
	{pattern: "GET /v1/jobs/{id}", h: (*Server).getJob, needs: fenced.CapJobs},
	{pattern: "POST /v1/queues/{queue}/claim", h: (*Server).claim, needs: fenced.CapJobs},
	{pattern: "POST /v1/jobs/{id}/heartbeat", h: (*Server).heartbeat, needs: fenced.CapJobs},
	{pattern: "POST /v1/jobs/{id}/complete", h: (*Server).complete, needs: fenced.CapJobs},
	{pattern: "POST /v1/jobs/{id}/fail", h: (*Server).fail, needs: fenced.CapJobs},
	{pattern: "POST /v1/jobs/{id}/snooze", h: (*Server).snooze, needs: fenced.CapJobs},
	{pattern: "POST /v1/jobs/{id}/progress", h: (*Server).progress, needs: fenced.CapJobs},
	{pattern: "POST /v1/jobs/{id}/metadata", h: (*Server).mergeMetadata, needs: fenced.CapJobs},
	{pattern: "POST /v1/jobs/{id}/cancel", h: (*Server).cancel, needs: fenced.CapJobs},
	{pattern: "POST /v1/jobs/{id}/retry", h: (*Server).retry, needs: fenced.CapJobs},
	{pattern: "DELETE /v1/jobs/{id}", h: (*Server).deleteJob, needs: fenced.CapJobs},
	{pattern: "GET /v1/jobs/{id}/dependencies", h: (*Server).taskDependencies, needs: fenced.CapWorkflows},
	{pattern: "POST /v1/jobs/{id}/tasks", h: (*Server).addWorkflowTasks, needs: fenced.CapWorkflows},

	{pattern: "POST /v1/workflows", h: (*Server).enqueueWorkflow, needs: fenced.CapWorkflows},
	{pattern: "GET /v1/workflows", h: (*Server).listWorkflows, query: true, needs: fenced.CapWorkflows},
	{pattern: "GET /v1/workflows/{id}", h: (*Server).getWorkflow, needs: fenced.CapWorkflows},
	{pattern: "POST /v1/workflows/{id}/cancel", h: (*Server).cancelWorkflow, needs: fenced.CapWorkflows},
	{pattern: "POST /v1/workflows/{id}/retry", h: (*Server).retryWorkflow, needs: fenced.CapWorkflows},
	{pattern: "DELETE /v1/workflows/{id}", h: (*Server).deleteWorkflow, needs: fenced.CapWorkflows},

	{pattern: "GET /v1/limits", h: (*Server).listJobLimits, needs: fenced.CapJobs},
	{pattern: "GET /v1/queues/{queue}/limits", h: (*Server).listJobLimits, needs: fenced.CapJobs},
	{pattern: "GET /v1/slots", h: (*Server).listKeySlots, needs: fenced.CapJobs},
	{pattern: "GET /v1/queues/{queue}/slots", h: (*Server).listKeySlots, needs: fenced.CapJobs},
	{pattern: "PUT /v1/queues/{queue}/limit", h: (*Server).setJobLimit, needs: fenced.CapJobs},
	{pattern: "DELETE /v1/queues/{queue}/limit", h: (*Server).deleteJobLimit, needs: fenced.CapJobs},
	{pattern: "PUT /v1/queues/{queue}/kinds/{kind}/limit", h: (*Server).setJobLimit, needs: fenced.CapJobs},
	{pattern: "DELETE /v1/queues/{queue}/kinds/{kind}/limit", h: (*Server).deleteJobLimit, needs: fenced.CapJobs},
	{pattern: "PUT /v1/queues/{queue}/keys/{key}/limit", h: (*Server).setJobLimit, needs: fenced.CapJobs},
	{pattern: "DELETE /v1/queues/{queue}/keys/{key}/limit", h: (*Server).deleteJobLimit, needs: fenced.CapJobs},

	{pattern: "POST /v1/queues/{queue}/pause", h: (*Server).pauseQueue, needs: fenced.CapJobs},
	{pattern: "POST /v1/queues/{queue}/resume", h: (*Server).resumeQueue, needs: fenced.CapJobs},
	{pattern: "GET /v1/pauses", h: (*Server).listQueuePauses, needs: fenced.CapJobs},
}

// routes registers apiRoutes and GET /metrics; each pattern is also the
// route's metric label. A route whose capability the backend lacks
// (Client.Unsupported, decided here once) answers its error, 501
// not_supported, whatever the request.
func (s *Server) routes() *http.ServeMux {
	m := http.NewServeMux()
	for _, rt := range apiRoutes {
		h := func(r *http.Request) (*reply, error) { return rt.h(s, r) }
		if !rt.query {
			h = withoutQuery(h)
		}
		if rt.needs != "" {
			if err := s.c.Unsupported(rt.needs); err != nil {
				h = func(*http.Request) (*reply, error) { return nil, err }
			}
		}
		m.Handle(rt.pattern, s.endpoint(h))
	}
	m.Handle("GET /metrics", s.stamped(s.metrics.handler(s.log)))
	m.HandleFunc(routeAPIPage, s.openAPIHTML)
	return m
}

// withoutQuery refuses a query string on a route that takes no parameters,
// as the job list refuses one it does not know, rather than ignoring it (a
// client that thinks GET /v1/leases?name=x filters would get every lease).
func withoutQuery(h func(*http.Request) (*reply, error)) func(*http.Request) (*reply, error) {
	return func(r *http.Request) (*reply, error) {
		if r.URL.RawQuery == "" {
			return h(r)
		}
		field := "query"
		if k, _, _ := strings.Cut(r.URL.RawQuery, "="); k != "" {
			if u, err := url.QueryUnescape(k); err == nil && u != "" {
				field, _, _ = strings.Cut(u, "&")
			}
		}
		return nil, invalid(field, "unknown parameter; "+r.Method+" "+r.URL.Path+" takes no query parameters")
	}
}
