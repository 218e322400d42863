package server

import (
	"net/http"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

type slotOut struct {
	fenced.Slot
	DBTime time.Time `json:"db_time"`
}

func (e *env) slot(r response) slotOut {
	e.t.Helper()
	var s slotOut
	e.decode(r, &s)
	return s
}

func TestSemaphores(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		t.Run("AcquireRenewReleaseGetList", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			a := e.slot(e.ok("POST", "/v1/semaphores/enc/acquire", map[string]any{"owner": "A", "slots": 2, "ttl_ms": 60000}))
			if a.Name != "enc" || a.Slot.Slot != 0 || a.Owner != "A" || a.Fence != 1 || !a.Held {
				t.Fatalf("acquire = %+v", a)
			}
			if d := a.ExpiresAt.Sub(a.DBTime); d != time.Minute {
				t.Fatalf("expires_at - db_time = %s, want the ttl", d)
			}
			b := e.slot(e.ok("POST", "/v1/semaphores/enc/acquire", map[string]any{"owner": "B", "slots": 2}))
			if b.Slot.Slot != 1 || b.Fence != 2 || b.ExpiresAt.Sub(b.DBTime) != 30*time.Second {
				t.Fatalf("second acquire = %+v, want slot 1, fence 2, the default 30s", b)
			}
			held := e.fails(http.StatusConflict, codeLeaseHeld, "POST", "/v1/semaphores/enc/acquire", map[string]any{"owner": "C", "slots": 2})
			if held.body["owner"] != "B" || num(held, "fence") != 2 || num(held, "slots") != 2 {
				t.Fatalf("held = %s, want the first to run out (B) and 2 slots", held.raw)
			}
			renewed := e.slot(e.ok("POST", "/v1/semaphores/enc/renew", map[string]any{"owner": "B", "fence": 2, "ttl_ms": 5000}))
			if renewed.Fence != 2 || renewed.Slot.Slot != 1 || renewed.ExpiresAt.Sub(renewed.DBTime) != 5*time.Second {
				t.Fatalf("renew = %+v", renewed)
			}
			var got struct {
				fenced.Semaphore
				DBTime time.Time `json:"db_time"`
			}
			e.decode(e.ok("GET", "/v1/semaphores/enc", nil), &got)
			if got.Slots != 2 || got.Fence != 2 || len(got.Holders) != 2 || got.Holders[1].Owner != "B" ||
				!got.Holders[1].ExpiresAt.Equal(renewed.ExpiresAt) || got.DBTime.IsZero() {
				t.Fatalf("get = %+v", got)
			}
			stale := e.fails(http.StatusConflict, codeStaleFence, "POST", "/v1/semaphores/enc/renew", map[string]any{"owner": "C", "fence": 2})
			if stale.body["kind"] != "semaphore" || stale.body["reason"] != "wrong_owner" || stale.body["current_owner"] != "B" {
				t.Fatalf("renew by another owner = %s", stale.raw)
			}
			rel := e.slot(e.ok("POST", "/v1/semaphores/enc/release", map[string]any{"owner": "A", "fence": 1}))
			if rel.Held || !rel.Released || rel.Fence != 1 {
				t.Fatalf("release = %+v", rel)
			}
			e.ok("POST", "/v1/semaphores/enc/release", map[string]any{"owner": "A", "fence": 1}) // again: success
			if c := e.slot(e.ok("POST", "/v1/semaphores/enc/acquire", map[string]any{"owner": "C", "slots": 2})); c.Fence != 3 || c.Slot.Slot != 0 {
				t.Fatalf("acquire after release = %+v, want slot 0 fence 3", c)
			}
			e.ok("POST", "/v1/semaphores/other/acquire", map[string]any{"owner": "D", "slots": 1})
			var list struct {
				Semaphores []fenced.Semaphore `json:"semaphores"`
			}
			e.decode(e.ok("GET", "/v1/semaphores", nil), &list)
			if len(list.Semaphores) != 2 || list.Semaphores[0].Name != "enc" || list.Semaphores[1].Name != "other" {
				t.Fatalf("list = %+v", list)
			}
			if e.metric(`fenced_semaphore_acquires_total{result="held"}`) != 1 ||
				e.metric(`fenced_stale_writes_total{kind="semaphore",reason="wrong_owner"}`) != 1 {
				t.Fatal("the semaphore metrics did not count the refusals")
			}
		})
		t.Run("RefusalsAndNotFound", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			e.fails(http.StatusBadRequest, codeInvalid, "POST", "/v1/semaphores/enc/acquire", map[string]any{"owner": "A"})
			e.fails(http.StatusBadRequest, codeInvalid, "POST", "/v1/semaphores/enc/acquire", map[string]any{"owner": "A", "slots": 0})
			e.fails(http.StatusBadRequest, codeInvalid, "POST", "/v1/semaphores/enc/acquire", map[string]any{"owner": "", "slots": 1})
			e.fails(http.StatusBadRequest, codeInvalid, "POST", "/v1/semaphores/enc/renew", map[string]any{"owner": "A"})
			nf := e.fails(http.StatusNotFound, codeNotFound, "GET", "/v1/semaphores/ghost", nil)
			if nf.body["message"] != `semaphore "ghost" not found` {
				t.Fatalf("not found = %s", nf.raw)
			}
			e.fails(http.StatusNotFound, codeNotFound, "POST", "/v1/semaphores/ghost/release", map[string]any{"owner": "A", "fence": 1})
		})
	})
}
