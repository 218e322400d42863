package server

import (
	"net/http"
	"testing"
	"time"
)

// TestQueuePause: a paused queue's long-polling claim waits through the
// enqueues of the queue and gets its job once the queue is resumed, woken
// by the resume; pauses are listed; pause and resume report whether they
// changed the queue; a bad queue name is refused.
func TestQueuePause(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		e := setup(t, db(t), Config{PollEvery: time.Hour}) // only a wake can end the wait early
		p := e.ok("POST", "/v1/queues/mail/pause", nil)
		if p.body["queue"] != "mail" || p.body["paused"] != true || p.body["changed"] != true || p.body["paused_at"] == nil {
			t.Fatalf("pause = %s", p.raw)
		}
		again := e.ok("POST", "/v1/queues/mail/pause", map[string]any{})
		if again.body["changed"] != false || again.body["paused_at"] != p.body["paused_at"] {
			t.Fatalf("pause again = %s, want the first pause unchanged", again.raw)
		}
		var list struct {
			Pauses []map[string]any `json:"pauses"`
		}
		e.decode(e.ok("GET", "/v1/pauses", nil), &list)
		if len(list.Pauses) != 1 || list.Pauses[0]["queue"] != "mail" || list.Pauses[0]["paused_at"] != p.body["paused_at"] {
			t.Fatalf("pauses = %+v", list.Pauses)
		}

		ch := e.claimAsync("mail", map[string]any{"owner": "w", "wait_ms": 20000})
		e.waitWaiting("mail")
		e.enqueue(map[string]any{"kind": "k", "queue": "mail"}) // wakes the claim, which finds nothing
		e.waitWaiting("mail")
		select {
		case r := <-ch:
			t.Fatalf("a claim of a paused queue returned: %d %s", r.r.status, r.r.raw)
		case <-time.After(200 * time.Millisecond):
		}
		r := e.ok("POST", "/v1/queues/mail/resume", nil)
		if r.body["paused"] != false || r.body["changed"] != true || r.body["paused_at"] != nil {
			t.Fatalf("resume = %s", r.raw)
		}
		got := <-ch
		got.want(t, 1)
		if got.elapsed > 10*time.Second {
			t.Fatalf("the claim returned %s after it started: the resume did not wake it", got.elapsed)
		}
		if r := e.ok("POST", "/v1/queues/mail/resume", nil); r.body["changed"] != false {
			t.Fatalf("resume again = %s", r.raw)
		}
		e.decode(e.ok("GET", "/v1/pauses", nil), &list)
		if len(list.Pauses) != 0 {
			t.Fatalf("pauses after resume = %+v", list.Pauses)
		}
		bad := e.fails(http.StatusBadRequest, codeInvalid, "POST", "/v1/queues/-mail/pause", nil)
		if bad.body["field"] != "queue" {
			t.Fatalf("bad queue refusal = %s", bad.raw)
		}
		e.fails(http.StatusBadRequest, codeInvalid, "POST", "/v1/queues/mail/pause", map[string]any{"until": 1})
	})
}
