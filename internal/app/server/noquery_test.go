package server

import (
	"net/http"
	"testing"
)

// TestQueryOnARouteWithoutParametersIsRefused: a route that takes no query
// parameters refuses one rather than ignoring it, as the job list refuses
// one it does not know; GET /v1/leases?name=x must not answer every lease.
func TestQueryOnARouteWithoutParametersIsRefused(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		e := setup(t, db(t), Config{})
		e.ok("POST", "/v1/leases/a/acquire", `{"owner": "A"}`)
		for _, c := range []struct{ method, path, body, field string }{
			{"GET", "/v1/leases?name=b", "", "name"},
			{"GET", "/v1/leases/a?owner=A", "", "owner"},
			{"POST", "/v1/leases/b/acquire?ttl_ms=5", `{"owner": "A"}`, "ttl_ms"},
			{"PUT", "/v1/resources/k?fence=9", `{"value": "v", "fence": 1}`, "fence"},
			{"GET", "/v1/jobs/1?x", "", "x"},
			{"GET", "/v1/leases?%zz", "", "query"},
		} {
			var body any
			if c.body != "" {
				body = c.body
			}
			r := e.fails(http.StatusBadRequest, codeInvalid, c.method, c.path, body)
			if r.body["field"] != c.field {
				t.Fatalf("%s %s: field %v, want %q: %s", c.method, c.path, r.body["field"], c.field, r.raw)
			}
		}
		e.fails(http.StatusNotFound, codeNotFound, "GET", "/v1/leases/b", nil) // nothing acquired
		e.ok("GET", "/healthz?probe=1", nil)
		e.ok("GET", "/v1/jobs?limit=5", nil)
	})
}
