package server

import (
	"testing"
)

// TestKeySlots: GET /v1/slots and /v1/queues/{queue}/slots list the
// concurrency keys in use with their limit, running, waiting and held-back
// jobs, and /metrics sums them by queue.
func TestKeySlots(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		e := setup(t, db(t), Config{})
		if e.metric(`fenced_key_slots_in_use{queue="mail"}`) != -1 {
			t.Fatal("a queue with no key in use has a key slots gauge")
		}
		e.ok("PUT", "/v1/queues/mail/limit", map[string]any{"per_key": 1})
		for range 3 {
			e.enqueue(map[string]any{"kind": "send", "queue": "mail", "concurrency_key": "ann"})
		}
		e.enqueue(map[string]any{"kind": "send", "queue": "other", "concurrency_key": "bob"})
		if got := e.claim("mail", map[string]any{"owner": "w", "limit": 10}); len(got) != 1 {
			t.Fatalf("claimed %d jobs under a limit of 1", len(got))
		}

		var all struct {
			Slots []map[string]any `json:"slots"`
		}
		e.decode(e.ok("GET", "/v1/slots", nil), &all)
		if len(all.Slots) != 2 {
			t.Fatalf("slots = %+v", all.Slots)
		}
		for k, want := range map[string]any{"queue": "mail", "concurrency_key": "ann", "limit": float64(1),
			"running": float64(1), "waiting": float64(2), "held_back": float64(2)} {
			if all.Slots[0][k] != want {
				t.Fatalf("slots[0][%s] = %v, want %v: %+v", k, all.Slots[0][k], want, all.Slots)
			}
		}
		if all.Slots[1]["concurrency_key"] != "bob" || all.Slots[1]["held_back"] != float64(0) {
			t.Fatalf("slots[1] = %+v", all.Slots[1])
		}
		e.decode(e.ok("GET", "/v1/queues/other/slots", nil), &all)
		if len(all.Slots) != 1 || all.Slots[0]["concurrency_key"] != "bob" {
			t.Fatalf("slots of other = %+v", all.Slots)
		}
		e.decode(e.ok("GET", "/v1/queues/none/slots", nil), &all)
		if all.Slots == nil || len(all.Slots) != 0 {
			t.Fatalf("slots of an empty queue = %+v", all.Slots)
		}

		for series, want := range map[string]float64{
			`fenced_key_slots_in_use{queue="mail"}`:  1,
			`fenced_jobs_held_back{queue="mail"}`:    2,
			`fenced_key_slots_in_use{queue="other"}`: 0,
			`fenced_jobs_held_back{queue="other"}`:   0,
		} {
			if got := e.metric(series); got != want {
				t.Errorf("%s = %v, want %v", series, got, want)
			}
		}
	})
}
