package server

import (
	"net/http"
	"testing"

	"github.com/fenced/fenced"
)

// A worker that lost the reply to its complete, fail or snooze sends it
// again: the repeat is answered 200 as the first was, with the first's
// db_time and replayed true, and counted once; an end of another kind, or
// a completion with another output, stays 409 stale_fence (not_running).
func TestJobEndRepeatIsReplayed(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		e := setup(t, db(t), Config{})
		j := e.enqueue(map[string]any{"kind": "k", "max_attempts": 3})
		c := e.claimOne("w", 60000)
		complete := map[string]any{"fence": c.Fence, "output": map[string]any{"n": 1}}
		first := e.ok("POST", jobPath(j.ID, "complete"), complete)
		if first.body["replayed"] != false {
			t.Fatalf("first complete = %s, want replayed false", first.raw)
		}
		again := e.ok("POST", jobPath(j.ID, "complete"), complete)
		if again.body["replayed"] != true || num(again, "id") != j.ID || num(again, "fence") != c.Fence ||
			again.body["db_time"] != first.body["db_time"] || again.header.Get("X-Fenced-DB-Time") != first.header.Get("X-Fenced-DB-Time") {
			t.Fatalf("repeated complete = %s (header %s), want the first's answer %s replayed",
				again.raw, again.header.Get("X-Fenced-DB-Time"), first.raw)
		}
		for op, body := range map[string]map[string]any{
			"complete": {"fence": c.Fence, "output": map[string]any{"n": 2}},
			"fail":     {"fence": c.Fence, "error": "x"},
			"snooze":   {"fence": c.Fence, "delay_ms": 0},
		} {
			r := e.fails(http.StatusConflict, codeStaleFence, "POST", jobPath(j.ID, op), body)
			if r.body["reason"] != string(fenced.ReasonNotRunning) {
				t.Fatalf("%s after complete = %s, want not_running", op, r.raw)
			}
		}
		if got := e.metric(`fenced_job_completions_total`); got != 1 {
			t.Fatalf("completions = %v, want 1: a replay is not a completion", got)
		}

		k := e.enqueue(map[string]any{"kind": "k", "max_attempts": 3})
		f := e.claimOne("w", 60000)
		fail := map[string]any{"fence": f.Fence, "error": "boom", "retry_in_ms": 3600000}
		first = e.ok("POST", jobPath(k.ID, "fail"), fail)
		again = e.ok("POST", jobPath(k.ID, "fail"), fail)
		if first.body["replayed"] != false || again.body["replayed"] != true || again.body["db_time"] != first.body["db_time"] {
			t.Fatalf("fail, then again = %s, %s; want the second replayed at the first's db_time", first.raw, again.raw)
		}
		r := e.fails(http.StatusConflict, codeStaleFence, "POST", jobPath(k.ID, "complete"), map[string]any{"fence": f.Fence})
		if r.body["reason"] != string(fenced.ReasonNotRunning) {
			t.Fatalf("complete after fail = %s, want not_running", r.raw)
		}
		if got := e.metric(`fenced_job_failures_total`); got != 1 {
			t.Fatalf("failures = %v, want 1", got)
		}
		if h := e.job(k.ID); h.Job.State != fenced.JobQueued || len(h.Attempts) != 1 {
			t.Fatalf("after a replayed fail = %+v", h)
		}

		s := e.enqueue(map[string]any{"kind": "k", "queue": "s"})
		sc := e.claim("s", map[string]any{"owner": "w"})[0]
		snooze := map[string]any{"fence": sc.Fence, "delay_ms": 3600000}
		first = e.ok("POST", jobPath(s.ID, "snooze"), snooze)
		again = e.ok("POST", jobPath(s.ID, "snooze"), snooze)
		if again.body["replayed"] != true || again.body["db_time"] != first.body["db_time"] {
			t.Fatalf("snooze, then again = %s, %s", first.raw, again.raw)
		}
	})
}
