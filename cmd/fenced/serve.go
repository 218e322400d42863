package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/app/dashboard"
	"github.com/fenced/fenced/internal/app/server"
	"github.com/spf13/cobra"
)

// envTokens names the environment variable of comma-separated tokens.
const envTokens = "FENCED_TOKENS"

// Timeouts of the HTTP server. A write may wait for a claim's long-poll.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = time.Minute
	writeTimeout      = server.DefaultMaxWait + 30*time.Second
	idleTimeout       = 2 * time.Minute
	shutdownTimeout   = 15 * time.Second
)

func newServeCmd(a *app) *cobra.Command {
	var addr, tokensFile, maxBody, tlsCert, tlsKey, periodicFile string
	var periodicFlags []string
	var noMaintenance, behindTLSProxy bool
	var sessionTTL time.Duration
	var maxWaiters int
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve leases, resources and jobs over HTTP/JSON",
		Long: `Serve fenced over HTTP/JSON under /v1 for workers in any language: leases,
the fenced resource store and the job queue (claims long-poll), with
/healthz (open), /v1/openapi.json (open: the API's OpenAPI 3.1
document) and /v1/openapi.html (open: the same document as a page to
read), /metrics (Prometheus) and an HTML dashboard at / (queues,
overdue and failed jobs, leases, stale writes rejected, a job browser with
retry, cancel and delete). Every answer the
database decided carries its clock reading in the X-Fenced-DB-Time header
and as "db_time".
Errors are JSON {"error": code, "message": …}: 400 invalid, 401/403, 404
not_found, 409 lease_held / stale_fence / conflict, 413 too_large, 429
too_many_requests (too many wrong tokens; Retry-After says when to try
again), 503 unknown_outcome / too_many_waiters (more than --max-waiters
claims would wait at once; the answer says Retry-After). The waiting claims
of a queue share one poll, every 100 ms at first (1 s on PostgreSQL) and
backing off to every 2 s while it finds nothing; an enqueue through this
server (on PostgreSQL, anywhere) wakes them at once.

Bearer tokens come from --tokens-file (one per line, # comments) and
FENCED_TOKENS (comma-separated); each is at least 16 characters. Without
tokens fenced serves only a loopback address and refuses to start on any
other (exit 2). Tokens are never logged. With tokens the dashboard asks a
browser for one at /login and keeps it logged in with a session cookie
for --session-ttl; API clients send the bearer token as before. A client
address gets 10 wrong tokens (API or login alike), then one more every
6 s, and all clients together 100, then one more every 0.6 s (addresses
that gave a right token within the hour are spared that one); past them
a token is not checked and the answer is 429.

--tls-cert and --tls-key serve HTTPS with that certificate and key (PEM
files). --behind-tls-proxy says only a proxy that terminates TLS reaches
the server: the client address is then the last X-Forwarded-For entry
(for the limits above, the loopback rule and the logs) and the session
cookie is Secure unless the proxy sends X-Forwarded-Proto: http. The
cookie is Secure over --tls-cert too.

The server also runs the job queue's maintenance — recovery of expired work,
retention and periodic jobs — unless --no-maintenance (run it in one place
or several: a fenced lease elects one). With --no-maintenance, jobs whose
worker stopped heartbeating stay running until a maintainer runs elsewhere;
the dashboard's "Running past their lease" panel says so. SIGINT or SIGTERM
shuts it down gracefully.

` + periodicHelp + `

It logs to stderr, one line of key=value pairs per event: the first,
msg=listening, gives the url it serves; then each request (never a token
or a body), maintenance and shutdown.`,
		Example: `  fenced serve
  fenced serve --db postgres://fenced@db:5432/fenced --addr 0.0.0.0:8080 --tokens-file /etc/fenced/tokens
  fenced serve --addr 0.0.0.0:8443 --tokens-file /etc/fenced/tokens --tls-cert cert.pem --tls-key key.pem
  fenced serve --addr 127.0.0.1:8080 --tokens-file /etc/fenced/tokens --behind-tls-proxy
  curl -s -X POST localhost:8080/v1/leases/report/acquire --json '{"owner": "w1", "ttl_ms": 30000}'`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			tokens, err := a.tokens(tokensFile)
			if err != nil {
				return err
			}
			limit, err := humanize.ParseBytes(maxBody)
			if err != nil || limit < 1024 || limit > 1<<30 {
				return usage("--max-body %q: want a size from 1KiB to 1GiB, such as 1MiB", maxBody)
			}
			if err := checkAddr(addr); err != nil {
				return usage("--addr %q: %v", addr, err)
			}
			if err := server.CheckListen(addr, len(tokens) > 0); err != nil {
				return usage("%v", err)
			}
			if sessionTTL < time.Minute || sessionTTL > 30*24*time.Hour {
				return usage("--session-ttl %s: want a duration from 1m to 720h", sessionTTL)
			}
			if maxWaiters < 1 || maxWaiters > 1_000_000 {
				return usage("--max-waiters %d: want 1 to 1000000", maxWaiters)
			}
			cert, err := loadTLS(tlsCert, tlsKey)
			if err != nil {
				return err
			}
			periodic, err := parsePeriodic(periodicFlags, periodicFile)
			if err != nil {
				return err
			}
			if len(periodic) > 0 && noMaintenance {
				return usage("--periodic and --periodic-file need the maintenance, which enqueues them: drop --no-maintenance")
			}
			return a.serve(cmd.Context(), serveOptions{addr: addr, tokens: tokens,
				maxBody: int64(limit), maintenance: !noMaintenance, sessionTTL: sessionTTL,
				cert: cert, behindTLSProxy: behindTLSProxy, maxWaiters: maxWaiters, periodic: periodic})
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on (port 0 picks a free one)")
	cmd.Flags().StringVar(&tokensFile, "tokens-file", "", "file of bearer tokens, one per line (also $"+envTokens+")")
	cmd.Flags().DurationVar(&sessionTTL, "session-ttl", dashboard.DefaultSessionTTL,
		"how long a dashboard login lasts (with tokens)")
	cmd.Flags().BoolVar(&noMaintenance, "no-maintenance", false, "do not run the job queue's maintenance here")
	cmd.Flags().StringArrayVar(&periodicFlags, "periodic", nil, "KIND=SCHEDULE: enqueue a KIND job every interval (5m) or at the times of a cron expression (0 9 * * 1-5); repeatable")
	cmd.Flags().StringVar(&periodicFile, "periodic-file", "", "JSON file of periodic jobs: [{\"kind\", \"every\" or \"cron\", \"queue\", \"args\"}]")
	cmd.Flags().StringVar(&tlsCert, "tls-cert", "", "serve HTTPS with this certificate (PEM; with --tls-key)")
	cmd.Flags().StringVar(&tlsKey, "tls-key", "", "the private key of --tls-cert (PEM)")
	cmd.Flags().BoolVar(&behindTLSProxy, "behind-tls-proxy", false,
		"only a TLS-terminating proxy reaches the server: trust its X-Forwarded-For and X-Forwarded-Proto")
	cmd.Flags().StringVar(&maxBody, "max-body", fmt.Sprintf("%dMiB", server.DefaultMaxBody>>20),
		"largest request body; the default fits the largest value (1 MiB) however JSON escapes it")
	cmd.Flags().IntVar(&maxWaiters, "max-waiters", server.DefaultMaxWaiters,
		"most claims waiting at once (long polls); a claim that would wait beyond it gets 503 too_many_waiters")
	return cmd
}

// checkAddr checks that addr is a host:port net.Listen could take, so that
// a malformed address is a usage error before the database is opened, with
// tokens as without (CheckListen looks at the host only without tokens).
func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return err
	}
	return nil
}

// loadTLS loads the certificate and key of --tls-cert and --tls-key (both
// or neither), so that a bad one is a usage error before the database is
// opened. Neither gives nil: plain HTTP.
func loadTLS(certFile, keyFile string) (*tls.Certificate, error) {
	switch {
	case certFile == "" && keyFile == "":
		return nil, nil
	case certFile == "" || keyFile == "":
		return nil, usage("--tls-cert and --tls-key go together: give both, or neither for plain HTTP")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, usage("--tls-cert %s, --tls-key %s: %v", certFile, keyFile, err)
	}
	return &cert, nil
}

type serveOptions struct {
	addr           string
	tokens         []string
	maxBody        int64
	maintenance    bool
	periodic       []fenced.PeriodicJob
	sessionTTL     time.Duration
	cert           *tls.Certificate // nil: plain HTTP
	behindTLSProxy bool
	maxWaiters     int
}

// tokens reads the tokens of --tokens-file and $FENCED_TOKENS. Errors
// name the file and line, never a token.
func (a *app) tokens(file string) ([]string, error) {
	tokens, err := server.SplitTokens(a.getenv(envTokens))
	if err != nil {
		return nil, usage("$%s: %v", envTokens, err)
	}
	if file == "" {
		return tokens, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, usage("--tokens-file: %v", err)
	}
	defer f.Close()
	more, err := server.ReadTokens(f)
	if err != nil {
		return nil, usage("--tokens-file %s: %v", file, err)
	}
	if len(more) == 0 {
		return nil, usage("--tokens-file %s has no tokens", file)
	}
	return append(tokens, more...), nil
}

// newLog is the server's log: one key=value line per event on w, the first
// saying where it listens, each stamped with its time in
// fencedtype.TimeLayout, the form of every time fenced writes.
func newLog(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 && a.Value.Kind() == slog.KindTime {
				return slog.String(slog.TimeKey, fencedtype.FormatTime(a.Value.Time()))
			}
			return a
		},
	}))
}

// serve runs the server until ctx ends (SIGINT, SIGTERM), then shuts it
// down: waiting claims return, requests in flight finish (within
// shutdownTimeout), the maintenance releases its lease.
//
// Everything it says once it listens is a log line on stderr (newLog),
// its failure included; what fails before (the database cannot be opened,
// the address taken) is the command's error line, as for every command.
func (a *app) serve(ctx context.Context, o serveOptions) error {
	log := newLog(a.stderr)
	ccfg, stopTelemetry, err := a.serveTelemetry(ctx, fenced.Config{Logger: log}, log)
	if err != nil {
		return err
	}
	defer func() {
		// Flush the spans still batched and the last metrics, within a
		// bound: a collector gone must not hold the shutdown.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := stopTelemetry(fctx); err != nil {
			log.Warn("telemetry: flushing the last spans and metrics failed", "err", err)
		}
	}()
	c, err := a.openWith(ctx, ccfg)
	if err != nil {
		return err
	}
	defer c.Close()
	cfg := server.Config{Tokens: o.tokens, MaxBody: o.maxBody, MaxWaiters: o.maxWaiters, Logger: log, Redact: a.scrub,
		DashboardLogin: true, BehindTLSProxy: o.behindTLSProxy}
	if o.maintenance && !c.Supports(fenced.CapJobs) {
		// The maintenance recovers and deletes jobs; this backend keeps none.
		o.maintenance = false
		log.Info("no job maintenance: the backend keeps no jobs", "backend", c.Driver().Dialect())
	}
	if o.maintenance {
		cfg.Maintenance = &fenced.MaintenanceConfig{Periodic: o.periodic}
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// "localhost" could resolve to something else: check what was bound.
	if bound := ln.Addr().String(); len(o.tokens) == 0 && server.CheckListen(bound, false) != nil {
		ln.Close()
		return usage("%s resolved to %s, which is not loopback: give tokens or a loopback IP", o.addr, bound)
	}
	// The dashboard reads the server's metrics, which exist once the
	// server does; it is set before the listener serves anything.
	var dash http.Handler
	cfg.Dashboard = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { dash.ServeHTTP(w, r) })
	srv, err := server.New(c, cfg)
	if err != nil {
		ln.Close()
		return err
	}
	dopts := dashboard.Options{Logger: log, SessionTTL: o.sessionTTL, StaleMinutes: srv.StaleMinutes, Secure: srv.RequestSecure,
		NoMaintenance: !o.maintenance}
	if srv.TokensSet() {
		dopts.CheckToken = srv.CheckToken
	}
	dash = dashboard.New(srv.Client(), srv.Gatherer(), dopts)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	scheme := "http"
	if o.cert != nil {
		scheme = "https"
		hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*o.cert}, MinVersion: tls.VersionTLS12}
	}
	served := make(chan error, 1)
	go func() {
		if o.cert != nil {
			served <- hs.ServeTLS(ln, "", "")
			return
		}
		served <- hs.Serve(ln)
	}()

	auth := "no tokens: loopback only"
	if n := len(o.tokens); n > 0 {
		auth = fmt.Sprintf("%d bearer token(s)", n)
	}
	maint := "on"
	if !o.maintenance {
		maint = "off"
	}
	proxy := "none"
	if o.behindTLSProxy {
		proxy = "tls (X-Forwarded-For and X-Forwarded-Proto trusted)"
	}
	log.Info("listening", "url", scheme+"://"+ln.Addr().String(), "database", a.shownURL(), "auth", auth, "maintenance", maint,
		"proxy", proxy)

	select {
	case err := <-served:
		srv.Close()
		log.Error("serving failed", "err", a.scrub(err.Error()))
		return &exitStatus{code: exitError} // said in the log
	case <-ctx.Done():
	}
	log.Info("shutting down")
	srv.Close()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			log.Error("shutting down failed", "err", a.scrub(err.Error()))
			return &exitStatus{code: exitError} // said in the log
		}
		log.Warn("requests still running after the shutdown timeout; closing their connections", "timeout", shutdownTimeout)
		hs.Close()
	}
	return nil
}
