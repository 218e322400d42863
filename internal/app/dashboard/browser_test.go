package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/app/dashboard"
	"github.com/fenced/fenced/internal/app/server"
	"github.com/fenced/fenced/internal/test/testdb"
)

// env is a served dashboard on SQLite, driven through the HTTP API.
type env struct {
	t     *testing.T
	c     *fenced.Client
	db    string // the database's URL
	url   string
	token string         // the bearer token of the API calls, "" without tokens
	srv   *server.Server // what serves url
}

func setup(t *testing.T) *env { return setupWith(t, nil, dashboard.Options{}) }

// setupWith serves the dashboard with tokens (then it asks browsers to
// log in, as fenced serve does) and o.
func setupWith(t *testing.T, tokens []string, o dashboard.Options) *env {
	t.Helper()
	return setupOn(t, testdb.SQLite(t), tokens, o)
}

// setupOn is setupWith on the database at db.
func setupOn(t *testing.T, db string, tokens []string, o dashboard.Options) *env {
	t.Helper()
	return setupServed(t, db, server.Config{Tokens: tokens}, o)
}

// setupServed serves the dashboard with o on the database at db, by a
// server of cfg (its tokens, its trust of a proxy) as fenced serve does:
// the dashboard checks tokens and learns TLS from the server, and the
// server's token throttle runs on o's clock.
func setupServed(t *testing.T, db string, cfg server.Config, o dashboard.Options) *env {
	t.Helper()
	tokens := cfg.Tokens
	ctx := context.Background()
	c, err := fenced.Open(ctx, db, fenced.Config{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	// The dashboard needs the server's metrics, which exist once the
	// server does: the same late binding as fenced serve.
	var dash http.Handler
	cfg.DashboardLogin = true
	cfg.Dashboard = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { dash.ServeHTTP(w, r) })
	if cfg.Now == nil {
		cfg.Now = o.Now
	}
	srv, err := server.New(c, cfg)
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	if srv.TokensSet() {
		o.CheckToken = srv.CheckToken
	}
	o.Secure = srv.RequestSecure
	if o.StaleMinutes == nil {
		o.StaleMinutes = srv.StaleMinutes
	}
	dash = dashboard.New(srv.Client(), srv.Gatherer(), o)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close(); ts.Close() })
	e := &env{t: t, c: c, db: db, url: ts.URL, srv: srv}
	if len(tokens) > 0 {
		e.token = tokens[0]
	}
	return e
}

// call sends a JSON request to the API and decodes the answer into out
// (when not nil); the status must be want.
func (e *env) call(method, path string, body any, want int, out any) {
	e.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, e.url+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		e.t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, raw, want)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", method, path, raw, err)
		}
	}
}

type job struct {
	ID    int64 `json:"id"`
	Fence int64 `json:"fence"`
}

func (e *env) enqueue(kind, queue string, maxAttempts int) job {
	var j job
	e.call("POST", "/v1/jobs", map[string]any{"kind": kind, "queue": queue,
		"args": map[string]any{"to": "<b>ops@example.com</b>"}, "max_attempts": maxAttempts}, 201, &j)
	return j
}

func (e *env) claim(queue, owner string, limit int, leaseMs int64) []job {
	var r struct{ Jobs []job }
	e.call("POST", "/v1/queues/"+queue+"/claim", map[string]any{"owner": owner, "limit": limit,
		"lease_ms": leaseMs}, 200, &r)
	if len(r.Jobs) != limit {
		e.t.Fatalf("claimed %d jobs from %s, want %d", len(r.Jobs), queue, limit)
	}
	return r.Jobs
}

// The error a failing job records; its markup must show as text.
const failure = `SMTP 554: relay <denied> for "ops@example.com"`

// scenario fills the database as a day of work would: finished and failed
// jobs, a worker gone quiet, a lease held, a stale write refused. It
// returns the failed job's id.
func (e *env) scenario() int64 {
	for range 3 {
		e.enqueue("email.send", "mail", 5)
	}
	e.enqueue("email.send", "mail", 5) // stays queued
	for _, j := range e.claim("mail", "worker-a", 3, 60_000) {
		e.call("POST", fmt.Sprintf("/v1/jobs/%d/complete", j.ID), map[string]any{"fence": j.Fence}, 200, nil)
	}

	// report.build fails once, retries, and fails for good.
	bad := e.enqueue("report.build", "reports", 2)
	for i, owner := range []string{"worker-b", "worker-c"} {
		j := e.claim("reports", owner, 1, 60_000)[0]
		e.call("POST", fmt.Sprintf("/v1/jobs/%d/fail", j.ID), map[string]any{"fence": j.Fence,
			"error": fmt.Sprintf("%s (try %d)", failure, i+1), "retry_in_ms": 0}, 200, nil)
	}

	// A worker claims with a short lease and goes quiet.
	e.enqueue("video.transcode", "media", 3)
	e.claim("media", "worker-gone", 1, 50)

	e.call("POST", "/v1/leases/nightly-report/acquire", map[string]any{"owner": "scheduler-1", "ttl_ms": 600_000}, 200, nil)

	// A write with an old fence is refused: the stale-write count moves.
	e.call("PUT", "/v1/resources/report", map[string]any{"value": "v2", "fence": 7}, 200, nil)
	e.call("PUT", "/v1/resources/report", map[string]any{"value": "v1", "fence": 3}, 409, nil)

	// Wait (bounded) for the quiet worker's lease to pass by the database clock.
	deadline := time.Now().Add(10 * time.Second)
	for {
		j, _, err := e.c.GetJob(context.Background(), bad.ID+1)
		if err != nil {
			e.t.Fatalf("get job: %v", err)
		}
		if j.LeaseExpiresAt != nil && j.LeaseExpiresAt.Before(j.DecidedAt) {
			break
		}
		if time.Now().After(deadline) {
			e.t.Fatal("the 50ms lease never expired by the database clock")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return bad.ID
}

// chromium finds the browser: skipped without it, except under CI=true.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (.ci/run installs it)")
	}
	t.Skip("chromium is not installed")
	return ""
}

// browse runs headless Chromium on url with the extra flags.
func browse(t *testing.T, bin, url string, flags ...string) string {
	t.Helper()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--user-data-dir=" + t.TempDir()}, flags...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, stderr.String())
	}
	return stdout.String()
}

var (
	tags   = regexp.MustCompile(`<[^>]*>`)
	spaces = regexp.MustCompile(`\s+`)
)

// section is the text a person reads in the element of id: tags dropped,
// entities decoded, spaces collapsed.
func section(t *testing.T, dom, id string) string {
	t.Helper()
	start := strings.Index(dom, `id="`+id+`"`)
	if start < 0 {
		t.Fatalf("no #%s on the page:\n%s", id, dom)
	}
	rest := dom[start:]
	if end := strings.Index(rest, "</section>"); end >= 0 {
		rest = rest[:end]
	}
	text := tags.ReplaceAllString(rest[strings.Index(rest, ">")+1:], " ")
	text = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#34;", `"`, "&amp;", "&").Replace(text)
	return strings.TrimSpace(spaces.ReplaceAllString(text, " "))
}

func artifacts(t *testing.T) string {
	dir := os.Getenv("FENCED_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestDashboardInBrowser(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	e := setup(t)
	bad := e.scenario()

	dom := browse(t, bin, e.url+"/", "--dump-dom")
	for id, wants := range map[string][]string{
		// queue, then pending queued running succeeded failed cancelled total
		"queues":   {"mail 0 1 0 3 0 0 4", "media 0 0 1 0 0 0 1", "reports 0 0 0 0 1 0 1"},
		"overdue":  {fmt.Sprintf("#%d video.transcode media worker-gone 1/3", bad+1)},
		"kinds":    {"report.build 1 0"},
		"failures": {fmt.Sprintf("#%d report.build reports failed 2/2", bad), failure + " (try 2)"},
		"leases":   {"nightly-report scheduler-1", "held"},
		"stale":    {"1 stale writes rejected: resource 1"},
	} {
		got := section(t, dom, id)
		for _, want := range wants {
			if !strings.Contains(got, want) {
				t.Errorf("#%s reads %q, want it to contain %q", id, got, want)
			}
		}
	}
	if strings.Contains(dom, "<denied>") || strings.Contains(dom, "<b>") {
		t.Error("the error or args markup reached the page unescaped")
	}

	job := browse(t, bin, fmt.Sprintf("%s/jobs/%d", e.url, bad), "--dump-dom")
	got := section(t, job, "attempts")
	for _, want := range []string{
		"Attempt 1 retry · fence 1 · owner worker-b", failure + " (try 1)",
		"Attempt 2 failed · fence 2 · owner worker-c", failure + " (try 2)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the attempts read %q, want them to contain %q", got, want)
		}
	}

	dir := artifacts(t)
	for name, path := range map[string]string{"dashboard.png": "/", "dashboard-job.png": fmt.Sprintf("/jobs/%d", bad)} {
		shot := filepath.Join(dir, name)
		browse(t, bin, e.url+path, "--screenshot="+shot, "--window-size=1280,900", "--hide-scrollbars")
		if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
			t.Fatalf("screenshot %s not written: %v", shot, err)
		}
		t.Logf("screenshot of %s: %s", path, shot)
	}
}
