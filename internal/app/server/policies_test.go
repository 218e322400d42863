package server

import (
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"
)

// parseTime reads a time of a reply.
func parseTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %v: %v", v, err)
	}
	return at
}

// A job's timeout and retry backoff given over HTTP come back with the
// enqueue, every read and the claim (retry with its absent fields filled
// in, jitter 0 meaning none); a job without them has null; values out of
// range, or an unknown field of retry, are refused and nothing is written.
func TestJobPoliciesOverHTTP(t *testing.T) {
	t.Parallel()
	allDBs(t, func(t *testing.T, db newDB) {
		e := setup(t, db(t), Config{})
		r := e.ok("POST", "/v1/jobs", map[string]any{"kind": "k", "timeout_ms": 90000,
			"retry": map[string]any{"base_ms": 2000, "jitter": 0}}, http.StatusCreated)
		wantRetry := map[string]any{"base_ms": 2000.0, "max_ms": 3600000.0, "jitter": 0.0}
		check := func(what string, job map[string]any) {
			t.Helper()
			if job["timeout_ms"] != 90000.0 || !reflect.DeepEqual(job["retry"], wantRetry) {
				t.Fatalf("%s: timeout_ms %v, retry %v; want 90000 and %v", what, job["timeout_ms"], job["retry"], wantRetry)
			}
		}
		check("enqueue", r.body)
		id := int64(r.body["id"].(float64))
		got := e.ok("GET", fmt.Sprintf("/v1/jobs/%d", id), nil)
		check("get", got.body["job"].(map[string]any))
		none := e.ok("POST", "/v1/jobs", map[string]any{"kind": "k", "timeout_ms": nil, "retry": nil}, http.StatusCreated)
		for _, f := range []string{"timeout_ms", "retry"} {
			if v, present := none.body[f]; !present || v != nil {
				t.Fatalf("a job without policies: %s is %v (present %v), want null: %s", f, v, present, none.raw)
			}
		}
		claimed := e.ok("POST", "/v1/queues/default/claim", map[string]any{"owner": "w", "lease_ms": 60000, "limit": 10})
		jobs := claimed.body["jobs"].([]any)
		if len(jobs) != 2 {
			t.Fatalf("claimed %d jobs, want 2", len(jobs))
		}
		check("claim", jobs[0].(map[string]any))
		// A failure without retry_in_ms waits the job's own backoff: 2 s
		// (attempt 1, no jitter), by the database clock of the failure.
		failed := e.ok("POST", fmt.Sprintf("/v1/jobs/%d/fail", id), map[string]any{"fence": jobs[0].(map[string]any)["fence"], "error": "boom"})
		after := e.ok("GET", fmt.Sprintf("/v1/jobs/%d", id), nil).body["job"].(map[string]any)
		failedAt, runAt := parseTime(t, failed.body["db_time"]), parseTime(t, after["run_at"])
		if d := runAt.Sub(failedAt); d < 1900*time.Millisecond || d > 2100*time.Millisecond {
			t.Fatalf("a job with its own 2 s backoff failed over HTTP runs again %s after the failure, want 2s: %s", d, failed.raw)
		}
		for field, body := range map[string]map[string]any{
			"timeout_ms":    {"kind": "k", "timeout_ms": -1},
			"retry.jitter":  {"kind": "k", "retry": map[string]any{"jitter": 1.5}},
			"retry.base_ms": {"kind": "k", "retry": map[string]any{"base_ms": 0}},
			"retry.max_ms":  {"kind": "k", "retry": map[string]any{"max_ms": -5}},
		} {
			r := e.fails(http.StatusBadRequest, codeInvalid, "POST", "/v1/jobs", body)
			if r.body["field"] != field {
				t.Fatalf("%v: field %v, want %s: %s", body, r.body["field"], field, r.raw)
			}
		}
		e.fails(http.StatusBadRequest, codeInvalid, "POST", "/v1/jobs", map[string]any{"kind": "k", "retry": map[string]any{"base": 1}})
		list := e.ok("GET", "/v1/jobs", nil)
		if n := len(list.body["jobs"].([]any)); n != 2 {
			t.Fatalf("%d jobs after the refused enqueues, want 2", n)
		}
	})
}
