package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/test/testdb"
)

// env is one test's server: a real database, the service over it, and an
// HTTP server on loopback.
type env struct {
	t     *testing.T
	c     *fenced.Client
	srv   *Server
	ts    *httptest.Server
	token string // sent as a bearer token when set
}

// newDB returns the URL of a fresh, empty database of one backend.
type newDB func(testing.TB) string

// eachDB runs test on SQLite and on PostgreSQL; test makes a fresh
// database of that backend with db(t).
func eachDB(t *testing.T, test func(t *testing.T, db newDB)) {
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		test(t, testdb.SQLite)
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		t.Parallel()
		test(t, testdb.Postgres)
	})
}

// allDBs runs test as eachDB does, and on MySQL/MariaDB too: for what every
// backend must store alike.
func allDBs(t *testing.T, test func(t *testing.T, db newDB)) {
	eachDB(t, test)
	t.Run("MySQL", func(t *testing.T) {
		t.Parallel()
		test(t, testdb.MySQL)
	})
}

// setup opens and migrates dbURL and serves it with cfg.
func setup(t *testing.T, dbURL string, cfg Config) *env {
	t.Helper()
	ctx := context.Background()
	c, err := fenced.Open(ctx, dbURL, fenced.Config{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	srv, err := New(c, cfg)
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close(); ts.Close() })
	e := &env{t: t, c: c, srv: srv, ts: ts}
	if len(cfg.Tokens) > 0 {
		e.token = cfg.Tokens[0]
	}
	return e
}

// response is one answer, its body decoded as a JSON object when it is one.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// do sends a request. body is sent as it is when a string or []byte, else
// marshalled; a non-nil body is declared application/json. Every 2xx
// answer must carry the database time, in the header and as db_time.
func (e *env) do(method, path string, body any, header ...string) response {
	e.t.Helper()
	r, err := e.send(method, path, body, header...)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	if r.status >= 500 && r.status != http.StatusServiceUnavailable {
		e.t.Fatalf("%s %s: %d %s", method, path, r.status, r.raw)
	}
	if r.status < 300 && path != "/metrics" {
		e.wantDBTime(r, method+" "+path)
	}
	wantTimeLayout(e.t, method+" "+path, r.body)
	return r
}

// timeLayoutForm is fencedtype.TimeLayout's form: UTC, microseconds.
var timeLayoutForm = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

// wantTimeLayout checks that every time in a decoded body (a member named
// db_time or ending in _at) is written in fencedtype.TimeLayout.
func wantTimeLayout(t *testing.T, what string, v any) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "db_time" || strings.HasSuffix(k, "_at")) && !timeLayoutForm.MatchString(s) {
				t.Errorf("%s: %s is %q, not in the form %s", what, k, s, fencedtype.TimeLayout)
			}
			wantTimeLayout(t, what, x)
		}
	case []any:
		for _, x := range v {
			wantTimeLayout(t, what, x)
		}
	}
}

// send sends a request (see do) and checks nothing; safe on any goroutine.
func (e *env) send(method, path string, body any, header ...string) (response, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return response{}, err
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, rd)
	if err != nil {
		return response{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
		if header[i] == "Host" {
			req.Host = header[i+1] // the client sends req.Host, not the header
		}
	}
	res, err := e.ts.Client().Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, err
	}
	r := response{status: res.StatusCode, header: res.Header, raw: raw}
	json.Unmarshal(raw, &r.body)
	return r, nil
}

// ok sends a request that must succeed with status (200 unless given).
func (e *env) ok(method, path string, body any, status ...int) response {
	e.t.Helper()
	want := http.StatusOK
	if len(status) > 0 {
		want = status[0]
	}
	r := e.do(method, path, body)
	if r.status != want {
		e.t.Fatalf("%s %s: %d %s, want %d", method, path, r.status, r.raw, want)
	}
	return r
}

// fails sends a request that must fail with status and code; errors the
// database decided must carry its time.
func (e *env) fails(status int, code, method, path string, body any, header ...string) response {
	e.t.Helper()
	r := e.do(method, path, body, header...)
	if r.status != status || r.body["error"] != code {
		e.t.Fatalf("%s %s: %d %s, want %d %q", method, path, r.status, r.raw, status, code)
	}
	if _, ok := r.body["message"].(string); !ok {
		e.t.Fatalf("%s %s: no message in %s", method, path, r.raw)
	}
	switch code {
	case codeLeaseHeld, codeStaleFence, codeConflict:
		e.wantDBTime(r, method+" "+path)
	}
	return r
}

// wantDBTime checks r carries a database time, the same in the header and
// the body, close to now (the database is on this machine).
func (e *env) wantDBTime(r response, what string) time.Time {
	e.t.Helper()
	h, err := time.Parse(time.RFC3339Nano, r.header.Get(HeaderDBTime))
	if !timeLayoutForm.MatchString(r.header.Get(HeaderDBTime)) {
		e.t.Errorf("%s: %s header %q is not in the form %s", what, HeaderDBTime, r.header.Get(HeaderDBTime), fencedtype.TimeLayout)
	}
	if err != nil {
		e.t.Fatalf("%s: %s header %q: %v", what, HeaderDBTime, r.header.Get(HeaderDBTime), err)
	}
	if d := time.Since(h); d < -time.Minute || d > time.Minute {
		e.t.Fatalf("%s: database time %s is %s from now", what, h, d)
	}
	if s, ok := r.body["db_time"].(string); ok {
		b, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || !b.Equal(h) {
			e.t.Fatalf("%s: db_time %q, header %s", what, s, h)
		}
	} else if r.body != nil {
		e.t.Fatalf("%s: no db_time in %s", what, r.raw)
	}
	return h
}

// decode decodes r's body into v.
func (e *env) decode(r response, v any) {
	e.t.Helper()
	if err := json.Unmarshal(r.raw, v); err != nil {
		e.t.Fatalf("decode %s: %v", r.raw, err)
	}
}

// num is a JSON number field of r's body.
func num(r response, field string) int64 {
	f, _ := r.body[field].(float64)
	return int64(f)
}

// waitFor polls cond until it holds, failing the test after a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		e := setup(t, db(t), Config{})
		r := e.ok("GET", "/healthz", nil)
		if r.body["status"] != "ok" {
			t.Fatalf("healthz = %s", r.raw)
		}
		t.Run("DatabaseGoneIs503", func(t *testing.T) {
			if !strings.HasPrefix(t.Name(), "TestHealth/SQLite") {
				// Closing a pool waits for the job listener's connection.
				t.Skip("shown on SQLite, whose handle closes at once")
			}
			e.c.Close()
			r := e.do("GET", "/healthz", nil)
			if r.status != http.StatusServiceUnavailable || r.body["error"] != codeUnavailable {
				t.Fatalf("healthz on a closed database = %d %s", r.status, r.raw)
			}
		})
	})
}

// sqlDriver is what a SQL backend implements besides its optional
// interfaces: what a test's wrapper of one embeds (a wrapper has the
// capabilities it embeds, and no other).
type sqlDriver interface {
	driver.Driver
	driver.JobDriver
	driver.SemaphoreDriver
}

// noClock hides the backend's clock read (driver.Clock), as a backend
// without one would.
type noClock struct{ sqlDriver }

func TestWithoutADatabaseClockReadAnswersCarryNoTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := fenced.OpenDriver(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	c := fenced.New(noClock{d.(sqlDriver)}, fenced.Config{})
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	srv, err := New(c, Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, c: c, srv: srv, ts: httptest.NewServer(srv)}
	t.Cleanup(func() { srv.Close(); e.ts.Close() })

	if r, err := e.send("GET", "/healthz", nil); err != nil || r.body["status"] != "ok" {
		t.Fatalf("healthz = %v %s", err, r.raw)
	}
	r, err := e.send("PUT", "/v1/resources/k", map[string]any{"value": "v", "fence": 1})
	if err != nil || r.status != 200 {
		t.Fatalf("write: %v %d %s", err, r.status, r.raw)
	}
	if _, ok := r.body["db_time"]; ok || r.header.Get(HeaderDBTime) != "" {
		t.Fatalf("an answer with no database reading carries a time: %v %s", r.header, r.raw)
	}
	// Where the deciding statement read the clock, the time is there.
	e.ok("POST", "/v1/leases/x/acquire", map[string]any{"owner": "A"})
}
