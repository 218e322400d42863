package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/fenced/fenced"
)

// TestDuplicateFieldsAreRefused: a field given twice (or twice under
// different case, which the decoder folds together) is ambiguous input and
// must be refused, not resolved silently by the last one winning; in a
// job's args or output too, at any depth, on every backend (PostgreSQL's
// jsonb would keep the last, SQLite and MariaDB the text as written).
func TestDuplicateFieldsAreRefused(t *testing.T) {
	t.Parallel()
	allDBs(t, func(t *testing.T, db newDB) {
		e := setup(t, db(t), Config{})
		for _, c := range []struct{ name, path, body, field string }{
			{"Exact", "/v1/leases/x/acquire", `{"owner": "A", "owner": "B"}`, "owner"},
			{"CaseVariant", "/v1/resources/k", `{"value": "v", "fence": 1, "FENCE": 9}`, "FENCE"},
			{"CaseVariantAlone", "/v1/leases/x/acquire", `{"OWNER": "A"}`, "OWNER"},
			{"InCounters", "/v1/jobs/1/progress", `{"fence": 1, "counters": {"n": 1, "n": 2}}`, "counters"},
			{"InArgs", "/v1/jobs", `{"kind": "k", "args": {"a": [{"b": 1, "b": 2}]}}`, "args"},
			{"InArgsEscaped", "/v1/jobs", `{"kind": "k", "args": {"b": 1.10, "a": 2, "\u0062": 3}}`, "args"},
			{"InMetadata", "/v1/jobs", `{"kind": "k", "metadata": {"traceparent": "a", "traceparent": "b"}}`, "metadata"},
		} {
			method := "POST"
			if strings.HasPrefix(c.path, "/v1/resources/") {
				method = "PUT"
			}
			r := e.fails(http.StatusBadRequest, codeInvalid, method, c.path, c.body)
			if r.body["field"] != c.field {
				t.Fatalf("%s: field %v, want %q: %s", c.name, r.body["field"], c.field, r.raw)
			}
		}
		// Nothing was written.
		e.fails(http.StatusNotFound, codeNotFound, "GET", "/v1/leases/x", nil)
		e.fails(http.StatusNotFound, codeNotFound, "GET", "/v1/resources/k", nil)
		// The same keys in different objects are not duplicates.
		j := e.enqueue(map[string]any{"kind": "k", "args": json.RawMessage(`{"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}], "c": {}}`)})
		if got := e.job(j.ID).Job.Args; !sameJSON(got, `{"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}], "c": {}}`) {
			t.Fatalf("args read back as %s", got)
		}

		// A completion's output: refused, and the attempt still runs.
		run := e.claimOne("w", 30000)
		r := e.fails(http.StatusBadRequest, codeInvalid, "POST", jobPath(run.ID, "complete"),
			fmt.Sprintf(`{"fence": %d, "output": {"b": 1.10, "a": 2, "b": 3}}`, run.Fence))
		if r.body["field"] != "output" {
			t.Fatalf("output: field %v, want output: %s", r.body["field"], r.raw)
		}
		if h := e.job(run.ID); h.Job.State != fenced.JobRunning || len(h.Job.Output) != 0 && string(h.Job.Output) != "null" {
			t.Fatalf("after a refused completion the job is %s with output %s", h.Job.State, h.Job.Output)
		}
		e.ok("POST", jobPath(run.ID, "complete"), fmt.Sprintf(`{"fence": %d, "output": {"b": 1.10, "a": 2}}`, run.Fence))
		if got := e.job(run.ID).Job.Output; !sameJSON(got, `{"a": 2, "b": 1.10}`) {
			t.Fatalf("output read back as %s", got)
		}
	})
}

// sameJSON reports whether JSON text a holds the value b does (numbers
// compared as written after normalising 1.10 and 1.1 alike: the backends
// store JSON numbers as numbers).
func sameJSON(a json.RawMessage, b string) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal([]byte(b), &vb) == nil && reflect.DeepEqual(va, vb)
}
