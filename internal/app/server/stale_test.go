package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fenced/fenced"
)

// TestStaleReasons: a 409 stale_fence names the precise reason in its
// reason field and says it in its message, for leases and jobs alike.
func TestStaleReasons(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		t.Run("Leases", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			e.ok("POST", "/v1/leases/report/acquire", map[string]any{"owner": "w1", "ttl_ms": 60000})
			for _, c := range []struct {
				op, owner string
				fence     int64
				reason    fenced.StaleReason
				message   string
			}{
				{"renew", "w2", 1, fenced.ReasonWrongOwner, `fence 1 is held by "w1", not "w2"`},
				{"release", "w2", 1, fenced.ReasonWrongOwner, `fence 1 is held by "w1", not "w2"`},
				{"renew", "w1", 2, fenced.ReasonNeverGranted, `fence 2 was never granted: the current fence is 1`},
				{"release", "w1", 2, fenced.ReasonNeverGranted, `fence 2 was never granted: the current fence is 1`},
			} {
				r := e.fails(http.StatusConflict, codeStaleFence, "POST", "/v1/leases/report/"+c.op,
					map[string]any{"owner": c.owner, "fence": c.fence})
				if r.body["reason"] != string(c.reason) || num(r, "your_fence") != c.fence || num(r, "current_fence") != 1 ||
					r.body["current_owner"] != "w1" || !strings.Contains(r.body["message"].(string), c.message) {
					t.Errorf("%s by %s with fence %d = %s, want reason %s and a message saying %q", c.op, c.owner, c.fence, r.raw, c.reason, c.message)
				}
			}
			if l := e.lease(e.ok("GET", "/v1/leases/report", nil)); l.Owner != "w1" || l.Fence != 1 || !l.Held {
				t.Fatalf("refused writes changed the lease: %+v", l)
			}
		})
		t.Run("Jobs", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			e.enqueue(map[string]any{"kind": "k"})
			c := e.claimOne("A", 60000)
			for _, op := range []string{"heartbeat", "progress", "complete"} {
				r := e.fails(http.StatusConflict, codeStaleFence, "POST", jobPath(c.ID, op),
					map[string]any{"fence": c.Fence + 1})
				if r.body["reason"] != string(fenced.ReasonNeverGranted) || num(r, "current_fence") != c.Fence ||
					r.body["current_owner"] != "A" || !strings.Contains(r.body["message"].(string), "was never granted") {
					t.Errorf("%s with a fence never granted = %s", op, r.raw)
				}
			}
			e.ok("POST", jobPath(c.ID, "complete"), map[string]any{"fence": c.Fence})
		})
	})
}
