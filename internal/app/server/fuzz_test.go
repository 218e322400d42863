package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/testdb"
)

// seeds are request bodies, good and bad, for both fuzz tests.
var seeds = []string{
	`{"owner": "A", "ttl_ms": 30000}`,
	`{"owner": "A", "fence": 1, "ttl_ms": 1}`,
	`{"value": "v", "fence": 3, "operation_id": "op"}`,
	`{"kind": "k", "args": {"a": [1, 2.5, "x", null, true]}, "queue": "q", "priority": 3, "max_attempts": 2, "idempotency_key": "i"}`,
	`{"kind": "k", "run_at": "2030-01-02T03:04:05Z"}`,
	`{"kind": "k", "delay_ms": 10}`,
	`{"owner": "w", "limit": 10, "lease_ms": 1000, "wait_ms": 5}`,
	`{"fence": 1, "output": {"ok": true}}`,
	`{"fence": 1, "error": "boom", "retry_in_ms": 0, "discard": false}`,
	`{"fence": 1, "delay_ms": 1}`,
	`{"fence": 1, "stage": "s", "counters": {"n": 9223372036854775807}}`,
	`{}`,
	``,
	`null`,
	`[]`,
	`{"owner": "A"} {}`,
	`{"owner":`,
	`{"fence": 1e400}`,
	`{"fence": -9223372036854775809}`,
	`{"ttl_ms": 9223372036854775807, "owner": "A"}`,
	`{"kind": "k", "args": {"n": 1e1000000}}`,
	`{"value": "\ud800"}`,
	`{"value": "\u0000", "fence": 1}`,
	"{\"value\": \"\xff\", \"fence\": 1}",
	`{"owner": "\u0007"}`,
	`{"counters": {"a": "b"}, "fence": 1}`,
	`{"OWNER": "A"}`,
	`{"owner": "A", "owner": "B"}`,
	strings.Repeat(`{"a":`, 200),
	`{"": ""}`,
}

// requestTypes make a fresh value of every request body type.
var requestTypes = []func() any{
	func() any { return new(acquireRequest) }, func() any { return new(renewRequest) },
	func() any { return new(releaseRequest) }, func() any { return new(putResourceRequest) },
	func() any { return new(enqueueRequest) }, func() any { return new(claimRequest) },
	func() any { return new(heartbeatRequest) }, func() any { return new(completeRequest) },
	func() any { return new(failRequest) }, func() any { return new(snoozeRequest) },
	func() any { return new(progressRequest) }, func() any { return new(cancelRequest) },
}

// FuzzDecodeJSON: decoding any bytes into any request type either works or
// is a 400 naming a field; it never panics.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, newReq := range requestTypes {
			err := decodeJSON(body, newReq())
			if err == nil {
				continue
			}
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != http.StatusBadRequest {
				t.Fatalf("decode %q into %T: %v, want nil or a 400", body, newReq(), err)
			}
			if ib, ok := ae.body.(*invalidBody); !ok || ib.Field == "" || ib.Error != codeInvalid {
				t.Fatalf("decode %q: error body %+v names no field", body, ae.body)
			}
		}
	})
}

// fuzzRoutes are the routes FuzzRequest sends bodies to; %s is the fuzzed
// path segment.
var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/v1/leases/%s/acquire"}, {"POST", "/v1/leases/%s/renew"}, {"POST", "/v1/leases/%s/release"},
	{"GET", "/v1/leases/%s"}, {"PUT", "/v1/resources/%s"}, {"GET", "/v1/resources/%s"},
	{"POST", "/v1/jobs"}, {"POST", "/v1/queues/%s/claim"}, {"POST", "/v1/jobs/%s/heartbeat"},
	{"POST", "/v1/jobs/%s/complete"}, {"POST", "/v1/jobs/%s/fail"}, {"POST", "/v1/jobs/%s/snooze"},
	{"POST", "/v1/jobs/%s/progress"}, {"POST", "/v1/jobs/%s/cancel"}, {"GET", "/v1/jobs/%s"},
	{"GET", "/v1/jobs?%s"},
}

// FuzzRequest sends any body to any route of a server on a real SQLite
// database and one on PostgreSQL: the answer is never a 5xx, an error is
// JSON with a code, and a success carries the database time.
func FuzzRequest(f *testing.F) {
	servers := []*Server{fuzzServer(f, testdb.SQLite(f)), fuzzServer(f, testdb.Postgres(f))}
	for _, s := range seeds {
		for i, rt := range fuzzRoutes {
			seg := "1"
			if strings.Contains(rt.path, "?") {
				seg = "state=queued&limit=2"
			}
			f.Add(uint8(i), seg, []byte(s))
		}
	}
	f.Add(uint8(0), "a/b c", []byte(seeds[0]))
	f.Add(uint8(8), "x", []byte(seeds[8]))
	f.Fuzz(func(t *testing.T, route uint8, seg string, body []byte) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		if !strings.Contains(rt.path, "?") {
			seg = url.PathEscape(seg)
		} else {
			seg = url.QueryEscape(seg)
			seg = strings.NewReplacer("%3D", "=", "%26", "&").Replace(seg)
		}
		for _, srv := range servers {
			fuzzOne(t, srv, rt.method, "http://127.0.0.1"+strings.Replace(rt.path, "%s", seg, 1), body)
		}
	})
}

// fuzzServer serves a fresh database for a fuzz test.
func fuzzServer(f *testing.F, dbURL string) *Server {
	ctx := context.Background()
	c, err := fenced.Open(ctx, dbURL, fenced.Config{})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := c.Migrate(ctx); err != nil {
		f.Fatal(err)
	}
	srv, err := New(c, Config{MaxWait: 10 * time.Millisecond, MaxBody: 4096})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { srv.Close(); c.Close() })
	return srv
}

// fuzzOne sends one request and checks its answer.
func fuzzOne(t *testing.T, srv *Server, method, target string, body []byte) {
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	req.RemoteAddr = "127.0.0.1:1234"
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	switch {
	case w.Code >= 500:
		t.Fatalf("%s %s %q: %d %s", method, target, body, w.Code, w.Body)
	case w.Code >= 400:
		var e struct{ Error, Message string }
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == "" || e.Message == "" {
			t.Fatalf("%s %s %q: %d with body %s", method, target, body, w.Code, w.Body)
		}
	case w.Code < 300:
		if _, err := time.Parse(time.RFC3339Nano, w.Header().Get(HeaderDBTime)); err != nil {
			t.Fatalf("%s %s: %d without %s", method, target, w.Code, HeaderDBTime)
		}
	}
}
