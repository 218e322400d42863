package server

import (
	"net/http"
	"testing"
)

// TestJobLimits: limits are set, listed and deleted per scope over HTTP,
// bad ones are refused naming their field, and an enqueue's keys reach the
// job and bound the claim.
func TestJobLimits(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		e := setup(t, db(t), Config{})
		set := e.ok("PUT", "/v1/queues/mail/limit", map[string]any{"per_key": 1, "global": 10})
		if set.body["queue"] != "mail" || set.body["per_key"] != float64(1) || set.body["global"] != float64(10) {
			t.Fatalf("set = %s", set.raw)
		}
		e.ok("PUT", "/v1/queues/mail/kinds/bulk/limit", map[string]any{"per_key": 3})
		e.ok("PUT", "/v1/queues/mail/keys/vip/limit", map[string]any{"per_key": 2})
		e.fails(http.StatusBadRequest, codeInvalid, "PUT", "/v1/queues/mail/keys/vip/limit", map[string]any{"per_key": 2, "global": 1})
		r := e.fails(http.StatusBadRequest, codeInvalid, "PUT", "/v1/queues/mail/limit", map[string]any{"per_key": -1})
		if r.body["field"] != "per_key" {
			t.Fatalf("refusal names %v, want per_key: %s", r.body["field"], r.raw)
		}
		e.fails(http.StatusBadRequest, codeInvalid, "PUT", "/v1/queues/mail/limit", map[string]any{"per_key": 1, "burst": 2})

		var all struct {
			Limits []map[string]any `json:"limits"`
		}
		e.decode(e.ok("GET", "/v1/limits", nil), &all)
		if len(all.Limits) != 3 || all.Limits[1]["concurrency_key"] != "vip" || all.Limits[2]["kind"] != "bulk" {
			t.Fatalf("limits = %+v", all.Limits)
		}
		e.decode(e.ok("GET", "/v1/queues/other/limits", nil), &all)
		if len(all.Limits) != 0 {
			t.Fatalf("limits of another queue = %+v", all.Limits)
		}

		for range 2 {
			j := e.enqueue(map[string]any{"kind": "send", "queue": "mail", "concurrency_key": "ann", "sequence_key": "s"})
			if j.ConcurrencyKey != "ann" || j.SequenceKey != "s" {
				t.Fatalf("enqueued %+v", j)
			}
		}
		e.fails(http.StatusBadRequest, codeInvalid, "POST", "/v1/jobs", map[string]any{"kind": "send", "sequence_continue_on_failed": true})
		if got := e.claim("mail", map[string]any{"owner": "w", "limit": 10}); len(got) != 1 || got[0].ConcurrencyKey != "ann" {
			t.Fatalf("claimed %+v, want one job of key ann", got)
		}

		e.ok("DELETE", "/v1/queues/mail/keys/vip/limit", nil)
		e.fails(http.StatusNotFound, codeNotFound, "DELETE", "/v1/queues/mail/keys/vip/limit", nil)
		e.decode(e.ok("GET", "/v1/queues/mail/limits", nil), &all)
		if len(all.Limits) != 2 {
			t.Fatalf("limits after a delete = %+v", all.Limits)
		}
	})
}
