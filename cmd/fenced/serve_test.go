package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/test/logbuf"

	"github.com/fenced/fenced"
)

const serveToken = "serve-test-token-0123456789"

func TestServeRefusesNonLoopbackWithoutTokens(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		r := c.fails(exitUsage, "serve", "--addr", addr)
		for _, want := range []string{"refusing to listen", "without tokens", "--tokens-file", "FENCED_TOKENS", "127.0.0.1"} {
			contains(t, "stderr", r.stderr, want)
		}
	}
	// Bad tokens are refused before listening, naming the line, never the token.
	file := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(file, []byte("# ops\nshort-secret\n"), 0o600)
	r := c.fails(exitUsage, "serve", "--tokens-file", file)
	contains(t, "stderr", r.stderr, "line 2")
	if strings.Contains(r.stderr, "short-secret") {
		t.Fatalf("the token is in the message: %s", r.stderr)
	}
	c.fails(exitUsage, "serve", "--tokens-file", filepath.Join(t.TempDir(), "missing"))
	c.fails(exitUsage, "serve", "--max-body", "lots")
	c.fails(exitUsage, "serve", "--max-waiters", "0")
	c.fails(exitUsage, "serve", "extra-arg")
}

// served is a running "fenced serve" process.
type served struct {
	t      *testing.T
	base   string
	token  string
	stdout *logbuf.Buffer
	stderr *logbuf.Buffer // its log
	done   chan struct{}  // closed when the process exited, with err set
	err    error
	signal func(os.Signal) error
}

// listeningURL finds the url of the log line that says where fenced
// serve listens.
var listeningURL = regexp.MustCompile(` msg=listening url=(\S+) `)

// serve starts "fenced serve" with args on a free loopback port and waits
// for the log line that says where it listens.
func (c cli) serve(args ...string) *served {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c.t.Cleanup(cancel)
	cmd := c.command(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	s := &served{t: c.t, stdout: &logbuf.Buffer{}, stderr: &logbuf.Buffer{}, done: make(chan struct{})}
	cmd.Stdout = s.stdout
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	s.signal = cmd.Process.Signal
	lines := bufio.NewScanner(stderr)
	for s.base == "" && lines.Scan() {
		fmt.Fprintln(s.stderr, lines.Text())
		if m := listeningURL.FindStringSubmatch(lines.Text()); m != nil {
			s.base = m[1]
		}
	}
	if s.base == "" {
		c.t.Fatalf("fenced serve never logged where it listens; stderr: %s", s.stderr)
	}
	go func() {
		io.Copy(s.stderr, stderr)
		s.err = cmd.Wait()
		close(s.done)
	}()
	c.t.Cleanup(func() {
		s.signal(syscall.SIGKILL)
		<-s.done
	})
	return s
}

// call sends a JSON request like curl and returns the status and the
// decoded body.
func (s *served) call(method, path, body string) (int, map[string]any, http.Header) {
	s.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(raw, &out); err != nil {
		s.t.Fatalf("%s %s: %d, body %q is not JSON", method, path, res.StatusCode, raw)
	}
	return res.StatusCode, out, res.Header
}

// want sends a request that must answer status.
func (s *served) want(status int, method, path, body string) map[string]any {
	s.t.Helper()
	got, out, h := s.call(method, path, body)
	if got != status {
		s.t.Fatalf("%s %s: %d %v, want %d", method, path, got, out, status)
	}
	if status < 300 && h.Get("X-Fenced-DB-Time") == "" {
		s.t.Fatalf("%s %s: no X-Fenced-DB-Time", method, path)
	}
	return out
}

// stop sends SIGTERM and waits for a clean exit.
func (s *served) stop() {
	s.t.Helper()
	if err := s.signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	select {
	case <-s.done:
		if s.err != nil {
			s.t.Fatalf("fenced serve after SIGTERM: %v; stderr: %s", s.err, s.stderr)
		}
	case <-time.After(30 * time.Second):
		s.t.Fatal("fenced serve did not stop after SIGTERM")
	}
}

// TestServe runs the README's walk-through against a real "fenced serve":
// acquire, resource write, stale write (409, nothing changed), enqueue,
// claim, complete; then a graceful stop.
func TestServe(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		s := c.serve()
		l := s.want(200, "POST", "/v1/leases/report/acquire", `{"owner": "w1", "ttl_ms": 100}`)
		s.want(200, "PUT", "/v1/resources/report", fmt.Sprintf(`{"value": "w1's", "fence": %v}`, l["fence"]))
		for {
			if _, cur, _ := s.call("GET", "/v1/leases/report", ""); cur["held"] == false {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		l2 := s.want(200, "POST", "/v1/leases/report/acquire", `{"owner": "w2", "ttl_ms": 30000}`)
		s.want(200, "PUT", "/v1/resources/report", fmt.Sprintf(`{"value": "w2's", "fence": %v}`, l2["fence"]))
		stale := s.want(409, "PUT", "/v1/resources/report", fmt.Sprintf(`{"value": "w1's late", "fence": %v}`, l["fence"]))
		if stale["error"] != "stale_fence" || stale["current_fence"] != l2["fence"] {
			t.Fatalf("stale write = %v", stale)
		}
		if r := s.want(200, "GET", "/v1/resources/report", ""); r["value"] != "w2's" {
			t.Fatalf("resource after the stale write = %v", r)
		}

		j := s.want(201, "POST", "/v1/jobs", `{"kind": "email", "args": {"to": "ann@example.com"}}`)
		claim := s.want(200, "POST", "/v1/queues/default/claim", `{"owner": "w1", "lease_ms": 30000, "wait_ms": 1000}`)
		jobs := claim["jobs"].([]any)
		if len(jobs) != 1 || jobs[0].(map[string]any)["id"] != j["id"] {
			t.Fatalf("claim = %v", claim)
		}
		fence := jobs[0].(map[string]any)["fence"]
		s.want(200, "POST", fmt.Sprintf("/v1/jobs/%v/complete", j["id"]), fmt.Sprintf(`{"fence": %v, "output": {"sent": true}}`, fence))
		if got := s.want(200, "GET", fmt.Sprintf("/v1/jobs/%v", j["id"]), ""); got["job"].(map[string]any)["state"] != "succeeded" {
			t.Fatalf("job = %v", got)
		}
		s.want(200, "GET", "/healthz", "")
		s.stop()
		contains(t, "stderr", s.stderr.String(), `route="POST /v1/jobs/{id}/complete"`)
		wantLogLines(t, s)
	})
}

// logLine is the one form of everything fenced serve says once it
// listens: key=value pairs, the time in fencedtype.TimeLayout first.
var logLine = regexp.MustCompile(`^time=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z level=(DEBUG|INFO|WARN|ERROR) msg=`)

// wantLogLines checks that a stopped server said everything in one form, on
// stderr: from "listening" to "shutting down", every line a log line.
func wantLogLines(t *testing.T, s *served) {
	t.Helper()
	if out := s.stdout.String(); out != "" {
		t.Errorf("fenced serve wrote to stdout: %q", out)
	}
	lines := strings.Split(strings.TrimSuffix(s.stderr.String(), "\n"), "\n")
	for _, l := range lines {
		if !logLine.MatchString(l) {
			t.Errorf("not a log line: %q", l)
		}
	}
	if !strings.Contains(lines[0], " msg=listening url=http://127.0.0.1:") || !strings.Contains(lines[0], " maintenance=") {
		t.Errorf("first line %q", lines[0])
	}
	if !strings.Contains(lines[len(lines)-1], "msg=\"shutting down\"") {
		t.Errorf("last line %q", lines[len(lines)-1])
	}
}

func TestServeWithTokens(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.env = append(c.env, envTokens+"="+serveToken)
	s := c.serve("--no-maintenance", "--max-body", "2KiB")
	s.want(401, "GET", "/v1/leases", "")
	s.want(200, "GET", "/healthz", "")
	s.token = serveToken
	s.want(200, "GET", "/v1/leases", "")
	s.want(413, "POST", "/v1/jobs", `{"kind": "k", "args": "`+strings.Repeat("x", 3000)+`"}`)
	s.token = "wrong-token-0123456789"
	s.want(401, "GET", "/v1/leases", "")
	s.stop()
	if out := s.stderr.String(); strings.Contains(out, serveToken) || strings.Contains(out, "wrong-token") {
		t.Fatalf("a token is in the log:\n%s", out)
	}
}

// With the default --max-body, the largest value the API documents (1 MiB)
// is accepted however its JSON string is escaped.
func TestServeDefaultBodyFitsTheLargestValue(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "f.db"))
	s := c.serve("--no-maintenance")
	body, _ := json.Marshal(map[string]any{"value": strings.Repeat("\x01", fenced.MaxValueBytes), "fence": 1})
	s.want(200, "PUT", "/v1/resources/big", string(body))
	s.stop()
}

// A server started with --no-maintenance says so on its dashboard's panel
// of jobs running past their lease, and what would take them back.
func TestServeWithoutMaintenanceSaysWhoRecovers(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "f.db"))
	s := c.serve("--no-maintenance")
	s.want(201, "POST", "/v1/jobs", `{"kind": "k"}`)
	s.want(200, "POST", "/v1/queues/default/claim", `{"owner": "gone", "limit": 1, "lease_ms": 1}`)
	waitFor(t, "the panel to say this server recovers nothing", func() bool {
		resp, err := http.Get(s.base + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), "This server runs no job maintenance (it was started with --no-maintenance)")
	})
	s.stop()
}
