package server

import (
	"net/http"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

type leaseOut struct {
	fenced.Lease
	DBTime time.Time `json:"db_time"`
}

func (e *env) lease(r response) leaseOut {
	e.t.Helper()
	var l leaseOut
	e.decode(r, &l)
	return l
}

// waitExpired waits until the database clock has passed name's expiry.
func (e *env) waitExpired(name string) {
	e.t.Helper()
	waitFor(e.t, "lease "+name+" to expire", func() bool {
		return e.ok("GET", "/v1/leases/"+name, nil).body["held"] == false
	})
}

func TestLeases(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		t.Run("AcquireRenewReleaseGetList", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			a := e.lease(e.ok("POST", "/v1/leases/report/acquire", map[string]any{"owner": "A", "ttl_ms": 60000}))
			if a.Name != "report" || a.Owner != "A" || a.Fence != 1 || !a.Held {
				t.Fatalf("acquire = %+v", a)
			}
			if d := a.ExpiresAt.Sub(a.DBTime); d != time.Minute {
				t.Fatalf("expires_at - db_time = %s, want the ttl", d)
			}
			again := e.lease(e.ok("POST", "/v1/leases/report/acquire", map[string]any{"owner": "A"}))
			if again.Fence != 1 || again.ExpiresAt.Sub(again.DBTime) != 30*time.Second {
				t.Fatalf("re-acquire by the holder = %+v, want fence 1 and the default 30s", again)
			}
			held := e.fails(http.StatusConflict, codeLeaseHeld, "POST", "/v1/leases/report/acquire", map[string]any{"owner": "B"})
			if held.body["owner"] != "A" || num(held, "fence") != 1 || held.body["expires_at"] == nil {
				t.Fatalf("held = %s", held.raw)
			}
			renewed := e.lease(e.ok("POST", "/v1/leases/report/renew", map[string]any{"owner": "A", "fence": 1, "ttl_ms": 5000}))
			if renewed.Fence != 1 || renewed.ExpiresAt.Sub(renewed.DBTime) != 5*time.Second {
				t.Fatalf("renew = %+v", renewed)
			}
			got := e.lease(e.ok("GET", "/v1/leases/report", nil))
			if got.Owner != "A" || got.Fence != 1 || !got.Held || !got.ExpiresAt.Equal(renewed.ExpiresAt) {
				t.Fatalf("get = %+v", got)
			}
			e.ok("POST", "/v1/leases/other/acquire", map[string]any{"owner": "C"})
			var list struct {
				Leases []fenced.Lease `json:"leases"`
			}
			e.decode(e.ok("GET", "/v1/leases", nil), &list)
			if len(list.Leases) != 2 || list.Leases[0].Name != "other" || list.Leases[1].Name != "report" {
				t.Fatalf("list = %+v", list)
			}
			rel := e.lease(e.ok("POST", "/v1/leases/report/release", map[string]any{"owner": "A", "fence": 1}))
			if rel.Held || rel.Fence != 1 || rel.Owner != "A" {
				t.Fatalf("release = %+v", rel)
			}
			e.ok("POST", "/v1/leases/report/release", map[string]any{"owner": "A", "fence": 1}) // again: success
			if b := e.lease(e.ok("POST", "/v1/leases/report/acquire", map[string]any{"owner": "B"})); b.Fence != 2 {
				t.Fatalf("acquire after release = %+v, want fence 2", b)
			}
		})
		t.Run("RenewAndReleaseAfterTakeoverAreStaleAndChangeNothing", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			e.ok("POST", "/v1/leases/job/acquire", map[string]any{"owner": "A", "ttl_ms": 50})
			e.waitExpired("job")
			b := e.lease(e.ok("POST", "/v1/leases/job/acquire", map[string]any{"owner": "B", "ttl_ms": 60000}))
			if b.Fence != 2 {
				t.Fatalf("takeover = %+v", b)
			}
			for _, op := range []string{"renew", "release"} {
				r := e.fails(http.StatusConflict, codeStaleFence, "POST", "/v1/leases/job/"+op, map[string]any{"owner": "A", "fence": 1})
				if num(r, "your_fence") != 1 || num(r, "current_fence") != 2 || r.body["current_owner"] != "B" ||
					r.body["reason"] != "superseded" || r.body["kind"] != "lease" || r.body["name"] != "job" {
					t.Fatalf("%s after takeover = %s", op, r.raw)
				}
			}
			now := e.lease(e.ok("GET", "/v1/leases/job", nil))
			if now.Owner != "B" || now.Fence != 2 || !now.Held || !now.ExpiresAt.Equal(b.ExpiresAt) {
				t.Fatalf("after the stale calls = %+v, want B's lease unchanged %+v", now, b)
			}
		})
		t.Run("RenewAfterExpiryIsStaleExpired", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			e.ok("POST", "/v1/leases/x/acquire", map[string]any{"owner": "A", "ttl_ms": 20})
			e.waitExpired("x")
			r := e.fails(http.StatusConflict, codeStaleFence, "POST", "/v1/leases/x/renew", map[string]any{"owner": "A", "fence": 1})
			if r.body["reason"] != string(fenced.ReasonExpired) || r.body["current_owner"] != "" {
				t.Fatalf("renew after expiry = %s", r.raw)
			}
		})
		t.Run("UnknownLeaseIsNotFound", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			r := e.fails(http.StatusNotFound, codeNotFound, "GET", "/v1/leases/nope", nil)
			e.wantDBTime(r, "not found")
			e.fails(http.StatusNotFound, codeNotFound, "POST", "/v1/leases/nope/renew", map[string]any{"owner": "A", "fence": 1})
			e.fails(http.StatusNotFound, codeNotFound, "POST", "/v1/leases/nope/release", map[string]any{"owner": "A", "fence": 1})
			var list struct {
				Leases []fenced.Lease `json:"leases"`
			}
			if e.decode(e.ok("GET", "/v1/leases", nil), &list); list.Leases == nil || len(list.Leases) != 0 {
				t.Fatalf("empty list = %+v, want []", list)
			}
		})
		t.Run("NamesAreEscapedPathSegments", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			e.ok("POST", "/v1/leases/billing%2Feu%20west/acquire", map[string]any{"owner": "A"})
			if l := e.lease(e.ok("GET", "/v1/leases/billing%2Feu%20west", nil)); l.Name != "billing/eu west" {
				t.Fatalf("lease = %+v", l)
			}
		})
		t.Run("RequiredFields", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			for _, c := range []struct {
				path  string
				body  any
				field string
			}{
				{"/v1/leases/x/acquire", map[string]any{}, "owner"},
				{"/v1/leases/x/acquire", map[string]any{"owner": "A", "ttl_ms": 0}, "ttl_ms"},
				{"/v1/leases/x/acquire", map[string]any{"owner": "A", "ttl_ms": 86400001}, "ttl_ms"},
				{"/v1/leases/x/acquire", map[string]any{"owner": "A\u0007"}, "owner"},
				{"/v1/leases/x/renew", map[string]any{"owner": "A"}, "fence"},
				{"/v1/leases/x/renew", map[string]any{"owner": "A", "fence": -1}, "fence"},
				{"/v1/leases/x/release", map[string]any{"fence": 1}, "owner"},
			} {
				r := e.fails(http.StatusBadRequest, codeInvalid, "POST", c.path, c.body)
				if r.body["field"] != c.field {
					t.Errorf("%s %v: field %v, want %q", c.path, c.body, r.body["field"], c.field)
				}
			}
		})
	})
}
