package server

import (
	"net/http"
	"testing"
)

// TestRunAtBeyondYear9999InUTCIsRefused: a run_at whose local year is 9999
// but whose UTC instant is in year 10000 must be refused as invalid, not
// stored (after which every answer that shows the job fails to encode).
func TestRunAtBeyondYear9999InUTCIsRefused(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		e := setup(t, db(t), Config{})
		r, err := e.send("POST", "/v1/jobs", `{"kind": "k", "run_at": "9999-12-31T23:59:59-23:59"}`)
		if err != nil {
			t.Fatalf("enqueue: %v (the server dropped the connection)", err)
		}
		if r.status != http.StatusBadRequest || r.body["error"] != codeInvalid || r.body["field"] != "run_at" {
			t.Fatalf("enqueue with run_at in year 10000 UTC: %d %s, want 400 invalid run_at", r.status, r.raw)
		}
		// Nothing was stored, so listing still works.
		e.ok("GET", "/v1/jobs", nil)
		// The other end of the range: a local year 2000 that is 1999 in UTC.
		e.fails(http.StatusBadRequest, codeInvalid, "POST", "/v1/jobs", `{"kind": "k", "run_at": "2000-01-01T00:00:00+01:00"}`)
	})
}
