package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// A job's metadata given over HTTP (the trace context of a producer in any
// language) comes back with the enqueue, every read and the claim, as the
// same JSON object; a job without it has null; metadata that is not an
// object, or too large, is refused and nothing is written.
func TestJobMetadataOverHTTP(t *testing.T) {
	t.Parallel()
	allDBs(t, func(t *testing.T, db newDB) {
		e := setup(t, db(t), Config{})
		meta := map[string]any{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tenant": "42"}
		j := e.enqueue(map[string]any{"kind": "k", "metadata": meta})
		same := func(what string, got json.RawMessage) {
			t.Helper()
			var m map[string]any
			if err := json.Unmarshal(got, &m); err != nil || !reflect.DeepEqual(m, meta) {
				t.Fatalf("%s: metadata %s, want %v", what, got, meta)
			}
		}
		same("enqueue", j.Metadata)
		same("get", e.job(j.ID).Job.Metadata)
		none := e.enqueue(map[string]any{"kind": "k", "metadata": nil})
		r := e.ok("GET", fmt.Sprintf("/v1/jobs/%d", none.ID), nil)
		if job, _ := r.body["job"].(map[string]any); job == nil || job["metadata"] != nil {
			t.Fatalf("a job without metadata: %s", r.raw)
		} else if _, present := job["metadata"]; !present {
			t.Fatalf("a job without metadata has no metadata member: %s", r.raw)
		}
		jobs := e.claim("default", map[string]any{"owner": "w", "lease_ms": 60000, "limit": 10})
		if len(jobs) != 2 {
			t.Fatalf("claimed %d jobs, want 2", len(jobs))
		}
		same("claim", jobs[0].Metadata)
		for _, bad := range []any{[]int{1}, "traceparent", map[string]string{"a": strings.Repeat("x", 70<<10)}} {
			r := e.fails(http.StatusBadRequest, codeInvalid, "POST", "/v1/jobs", map[string]any{"kind": "k", "metadata": bad})
			if r.body["field"] != "metadata" {
				t.Fatalf("bad metadata: field %v: %s", r.body["field"], r.raw)
			}
		}
		var list struct{ Jobs []json.RawMessage }
		e.decode(e.ok("GET", "/v1/jobs", nil), &list)
		if len(list.Jobs) != 2 {
			t.Fatalf("%d jobs after the refused enqueues, want 2", len(list.Jobs))
		}
	})
}
