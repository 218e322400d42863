package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestDuplicateFieldsAreRefused: a field given twice (or twice under
// different case, which the decoder folds together) is ambiguous input and
// must be refused, not resolved silently by the last one winning.
func TestDuplicateFieldsAreRefused(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		e := setup(t, db(t), Config{})
		for _, c := range []struct{ name, path, body, field string }{
			{"Exact", "/v1/leases/x/acquire", `{"owner": "A", "owner": "B"}`, "owner"},
			{"CaseVariant", "/v1/resources/k", `{"value": "v", "fence": 1, "FENCE": 9}`, "FENCE"},
			{"CaseVariantAlone", "/v1/leases/x/acquire", `{"OWNER": "A"}`, "OWNER"},
			{"InCounters", "/v1/jobs/1/progress", `{"fence": 1, "counters": {"n": 1, "n": 2}}`, "counters"},
			{"InArgs", "/v1/jobs", `{"kind": "k", "args": {"a": [{"b": 1, "b": 2}]}}`, "args"},
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
		e.ok("POST", "/v1/jobs", `{"kind": "k", "args": {"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}], "c": {}}}`, http.StatusCreated)
	})
}
