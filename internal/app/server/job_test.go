package server

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

type jobOut struct {
	fenced.Job
	Existing bool      `json:"existing"`
	DBTime   time.Time `json:"db_time"`
}

type claimOut struct {
	Jobs   []fenced.Job `json:"jobs"`
	DBTime time.Time    `json:"db_time"`
}

type historyOut struct {
	Job      fenced.Job          `json:"job"`
	Attempts []fenced.JobAttempt `json:"attempts"`
}

func (e *env) enqueue(body map[string]any) jobOut {
	e.t.Helper()
	var j jobOut
	e.decode(e.ok("POST", "/v1/jobs", body, http.StatusCreated), &j)
	return j
}

func (e *env) claim(queue string, body map[string]any) []fenced.Job {
	e.t.Helper()
	var c claimOut
	e.decode(e.ok("POST", "/v1/queues/"+queue+"/claim", body), &c)
	return c.Jobs
}

// claimOne claims the one job of queue default as owner, with lease ms.
func (e *env) claimOne(owner string, leaseMs int) fenced.Job {
	e.t.Helper()
	jobs := e.claim("default", map[string]any{"owner": owner, "lease_ms": leaseMs})
	if len(jobs) != 1 {
		e.t.Fatalf("claim by %s got %d jobs, want 1", owner, len(jobs))
	}
	return jobs[0]
}

func (e *env) job(id int64) historyOut {
	e.t.Helper()
	var h historyOut
	e.decode(e.ok("GET", fmt.Sprintf("/v1/jobs/%d", id), nil), &h)
	return h
}

func jobPath(id int64, op string) string { return fmt.Sprintf("/v1/jobs/%d/%s", id, op) }

func TestJobs(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		t.Run("EnqueueClaimHeartbeatProgressComplete", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			r := e.ok("POST", "/v1/jobs", map[string]any{"kind": "email", "args": map[string]any{"to": "ann"},
				"priority": 2, "max_attempts": 3, "idempotency_key": "mail-1"}, http.StatusCreated)
			var j jobOut
			e.decode(r, &j)
			if r.header.Get("Location") != fmt.Sprintf("/v1/jobs/%d", j.ID) || j.State != fenced.JobQueued ||
				j.Queue != "default" || j.Priority != 2 || j.MaxAttempts != 3 || string(j.Args) != `{"to": "ann"}` && string(j.Args) != `{"to":"ann"}` || j.Existing {
				t.Fatalf("enqueue = %s (Location %q)", r.raw, r.header.Get("Location"))
			}
			var same jobOut
			e.decode(e.ok("POST", "/v1/jobs", map[string]any{"kind": "email", "idempotency_key": "mail-1"}), &same)
			if same.ID != j.ID || !same.Existing {
				t.Fatalf("enqueue with the same key = %+v, want job %d existing", same, j.ID)
			}

			c := e.claimOne("w1", 60000)
			if c.ID != j.ID || c.State != fenced.JobRunning || c.Fence != 1 || c.Attempt != 1 || c.Owner != "w1" || c.LeaseExpiresAt == nil {
				t.Fatalf("claim = %+v", c)
			}
			hb := e.ok("POST", jobPath(c.ID, "heartbeat"), map[string]any{"fence": c.Fence, "lease_ms": 5000})
			exp, _ := time.Parse(time.RFC3339Nano, hb.body["lease_expires_at"].(string))
			if d := exp.Sub(e.wantDBTime(hb, "heartbeat")); d != 5*time.Second || hb.body["cancel_requested"] != false {
				t.Fatalf("heartbeat = %s (expiry - db_time %s)", hb.raw, d)
			}
			e.ok("POST", jobPath(c.ID, "progress"), map[string]any{"fence": c.Fence, "stage": "sending", "counters": map[string]int{"sent": 3}})
			if p := string(e.job(c.ID).Job.Progress); p != `{"stage":"sending","counters":{"sent":3}}` && p != `{"stage": "sending", "counters": {"sent": 3}}` {
				t.Fatalf("progress = %s", p)
			}
			e.ok("POST", jobPath(c.ID, "complete"), map[string]any{"fence": c.Fence, "output": []int{1, 2}})
			h := e.job(c.ID)
			if h.Job.State != fenced.JobSucceeded || h.Job.FinishedAt == nil || len(h.Attempts) != 1 ||
				h.Attempts[0].Outcome != "succeeded" || h.Attempts[0].Fence != 1 || h.Attempts[0].Owner != "w1" {
				t.Fatalf("after complete = %+v", h)
			}
			again := e.fails(http.StatusConflict, codeStaleFence, "POST", jobPath(c.ID, "complete"), map[string]any{"fence": c.Fence})
			if again.body["reason"] != string(fenced.ReasonNotRunning) || num(again, "current_fence") != 1 {
				t.Fatalf("second complete = %s", again.raw)
			}
			cancel := e.fails(http.StatusConflict, codeConflict, "POST", jobPath(c.ID, "cancel"), nil)
			if cancel.body["state"] != "succeeded" || cancel.body["op"] != "cancel" || num(cancel, "id") != c.ID {
				t.Fatalf("cancel of a finished job = %s", cancel.raw)
			}
			if jobs := e.claim("default", map[string]any{"owner": "w1"}); len(jobs) != 0 {
				t.Fatalf("claim of an empty queue = %+v", jobs)
			}
		})
		t.Run("FailRetriesOrDeadLetters", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			j := e.enqueue(map[string]any{"kind": "k", "max_attempts": 5})
			c := e.claimOne("w", 60000)
			e.ok("POST", jobPath(j.ID, "fail"), map[string]any{"fence": c.Fence, "error": "boom", "retry_in_ms": 0})
			h := e.job(j.ID)
			if h.Job.State != fenced.JobQueued || h.Job.LastError != "boom" || h.Attempts[0].Outcome != "retry" {
				t.Fatalf("after fail = %+v", h)
			}
			c = e.claimOne("w", 60000)
			e.ok("POST", jobPath(j.ID, "fail"), map[string]any{"fence": c.Fence, "error": "again"}) // default backoff
			if h := e.job(j.ID); h.Job.State != fenced.JobQueued || h.Job.RunAt.Sub(*h.Attempts[1].EndedAt) < 900*time.Millisecond {
				t.Fatalf("fail without retry_in_ms = %+v, want the backoff of attempt 2 (1s–2s)", h.Job)
			}
			k := e.enqueue(map[string]any{"kind": "k", "queue": "q2"})
			kc := e.claim("q2", map[string]any{"owner": "w"})[0]
			e.ok("POST", jobPath(k.ID, "fail"), map[string]any{"fence": kc.Fence, "error": "fatal", "discard": true})
			if h := e.job(k.ID); h.Job.State != fenced.JobFailed || h.Attempts[0].Outcome != "failed" {
				t.Fatalf("discarded = %+v", h)
			}
		})
		t.Run("SnoozeRunsLaterWithoutSpendingAnAttempt", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			j := e.enqueue(map[string]any{"kind": "k", "max_attempts": 1})
			c := e.claimOne("w", 60000)
			e.fails(http.StatusBadRequest, codeInvalid, "POST", jobPath(j.ID, "snooze"), map[string]any{"fence": c.Fence})
			e.ok("POST", jobPath(j.ID, "snooze"), map[string]any{"fence": c.Fence, "delay_ms": 60000})
			h := e.job(j.ID)
			if h.Job.State != fenced.JobQueued || h.Job.MaxAttempts != 2 || h.Job.RunAt.Sub(*h.Attempts[0].EndedAt) < 59*time.Second {
				t.Fatalf("snoozed = %+v", h.Job)
			}
		})
		t.Run("CancelQueuedAndRunning", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			q := e.enqueue(map[string]any{"kind": "k", "queue": "a"})
			var cq jobOut
			e.decode(e.ok("POST", jobPath(q.ID, "cancel"), nil), &cq)
			if cq.State != fenced.JobCancelled {
				t.Fatalf("cancel of a queued job = %+v", cq)
			}
			r := e.enqueue(map[string]any{"kind": "k"})
			c := e.claimOne("w", 60000)
			var cr jobOut
			e.decode(e.ok("POST", jobPath(r.ID, "cancel"), "{}"), &cr)
			if cr.State != fenced.JobRunning || !cr.CancelRequested {
				t.Fatalf("cancel of a running job = %+v", cr)
			}
			if hb := e.ok("POST", jobPath(r.ID, "heartbeat"), map[string]any{"fence": c.Fence}); hb.body["cancel_requested"] != true {
				t.Fatalf("heartbeat after cancel = %s", hb.raw)
			}
			e.ok("POST", jobPath(r.ID, "fail"), map[string]any{"fence": c.Fence, "error": "stopped"})
			if h := e.job(r.ID); h.Job.State != fenced.JobCancelled {
				t.Fatalf("stopped after cancel = %+v", h.Job)
			}
			e.fails(http.StatusBadRequest, codeInvalid, "POST", jobPath(r.ID, "cancel"), `{"force": true}`)
			e.fails(http.StatusNotFound, codeNotFound, "POST", jobPath(999, "cancel"), nil)
		})
		t.Run("RetryFailedOrCancelled", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			q := e.enqueue(map[string]any{"kind": "k", "queue": "r", "max_attempts": 1})
			running := e.fails(http.StatusConflict, codeConflict, "POST", jobPath(q.ID, "retry"), nil)
			if running.body["state"] != "queued" || running.body["op"] != "retry" {
				t.Fatalf("retry of a queued job = %s", running.raw)
			}
			c := e.claim("r", map[string]any{"owner": "w"})[0]
			e.ok("POST", jobPath(q.ID, "fail"), map[string]any{"fence": c.Fence, "error": "boom"})
			if h := e.job(q.ID); h.Job.State != fenced.JobFailed {
				t.Fatalf("after its one attempt failed = %+v", h.Job)
			}
			var again jobOut
			e.decode(e.ok("POST", jobPath(q.ID, "retry"), "{}"), &again)
			if again.State != fenced.JobQueued || again.MaxAttempts != 2 {
				t.Fatalf("retry of a failed job = %+v; want queued with one more attempt", again)
			}
			if jobs := e.claim("r", map[string]any{"owner": "w2"}); len(jobs) != 1 || jobs[0].ID != q.ID || jobs[0].Attempt != 2 {
				t.Fatalf("claim after the retry = %+v", jobs)
			}
			e.fails(http.StatusBadRequest, codeInvalid, "POST", jobPath(q.ID, "retry"), `{"now": true}`)
			e.fails(http.StatusNotFound, codeNotFound, "POST", jobPath(999, "retry"), nil)
		})
		t.Run("ListPagesWithACursor", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			for i := range 5 {
				e.enqueue(map[string]any{"kind": fmt.Sprint("k", i%2), "queue": "q"})
			}
			e.enqueue(map[string]any{"kind": "k0", "queue": "other"})
			var ids []int64
			path := "/v1/jobs?queue=q&limit=2"
			for pages := 0; ; pages++ {
				var page struct {
					Jobs      []fenced.Job `json:"jobs"`
					NextAfter *int64       `json:"next_after"`
				}
				e.decode(e.ok("GET", path, nil), &page)
				for _, j := range page.Jobs {
					ids = append(ids, j.ID)
				}
				if page.NextAfter == nil {
					break
				}
				if pages > 5 {
					t.Fatal("the cursor does not end")
				}
				path = fmt.Sprintf("/v1/jobs?queue=q&limit=2&after=%d", *page.NextAfter)
			}
			if fmt.Sprint(ids) != "[1 2 3 4 5]" {
				t.Fatalf("paged ids = %v", ids)
			}
			ids = nil
			path = "/v1/jobs?queue=q&limit=2&order=desc"
			for pages := 0; ; pages++ {
				var page struct {
					Jobs       []fenced.Job `json:"jobs"`
					NextAfter  *int64       `json:"next_after"`
					NextBefore *int64       `json:"next_before"`
				}
				e.decode(e.ok("GET", path, nil), &page)
				for _, j := range page.Jobs {
					ids = append(ids, j.ID)
				}
				if page.NextAfter != nil {
					t.Fatalf("next_after in order=desc: %d", *page.NextAfter)
				}
				if page.NextBefore == nil {
					break
				}
				if pages > 5 {
					t.Fatal("the cursor does not end")
				}
				path = fmt.Sprintf("/v1/jobs?queue=q&limit=2&order=desc&before=%d", *page.NextBefore)
			}
			if fmt.Sprint(ids) != "[5 4 3 2 1]" {
				t.Fatalf("paged ids newest first = %v", ids)
			}
			var k0 struct {
				Jobs []fenced.Job `json:"jobs"`
			}
			e.decode(e.ok("GET", "/v1/jobs?kind=k0&state=queued", nil), &k0)
			if len(k0.Jobs) != 4 {
				t.Fatalf("kind k0 = %d jobs, want 4", len(k0.Jobs))
			}
			var none struct {
				Jobs      []fenced.Job `json:"jobs"`
				NextAfter *int64       `json:"next_after"`
			}
			if e.decode(e.ok("GET", "/v1/jobs?state=failed", nil), &none); none.Jobs == nil || len(none.Jobs) != 0 || none.NextAfter != nil {
				t.Fatalf("empty page = %+v", none)
			}
		})
		t.Run("ScheduledJobs", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			at := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
			j := e.enqueue(map[string]any{"kind": "k", "run_at": at.Format(time.RFC3339Nano)})
			if !j.RunAt.Equal(at) {
				t.Fatalf("run_at = %s, want %s", j.RunAt, at)
			}
			d := e.enqueue(map[string]any{"kind": "k", "delay_ms": 60000})
			// db_time is read in the same statement as run_at, a moment later.
			if got := d.RunAt.Sub(d.DBTime); got > time.Minute || got < time.Minute-time.Second {
				t.Fatalf("delayed run_at - db_time = %s", got)
			}
			if jobs := e.claim("default", map[string]any{"owner": "w", "limit": 10}); len(jobs) != 0 {
				t.Fatalf("claimed scheduled jobs: %+v", jobs)
			}
			e.fails(http.StatusBadRequest, codeInvalid, "POST", "/v1/jobs", map[string]any{"kind": "k", "run_at": "tomorrow"})
			e.fails(http.StatusBadRequest, codeInvalid, "POST", "/v1/jobs", map[string]any{"kind": "k", "run_at": at.Format(time.RFC3339), "delay_ms": 5})
		})
		t.Run("StaleWorkerAfterTakeoverGets409AndChangesNothing", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			j := e.enqueue(map[string]any{"kind": "k"})
			a := e.claimOne("A", 30)
			// A's lease expires; recovery takes the job back and B claims it.
			waitFor(t, "A's lease to expire and the job to be recovered", func() bool {
				n, err := e.c.RecoverJobs(context.Background(), nil, 10, fenced.Backoff{Base: time.Millisecond, Max: time.Millisecond, Jitter: -1})
				return err == nil && n == 1
			})
			var b fenced.Job
			waitFor(t, "B's claim", func() bool {
				jobs := e.claim("default", map[string]any{"owner": "B", "lease_ms": 60000})
				if len(jobs) == 1 {
					b = jobs[0]
				}
				return len(jobs) == 1
			})
			if b.Fence != a.Fence+1 {
				t.Fatalf("B's fence %d, A's %d", b.Fence, a.Fence)
			}
			e.ok("POST", jobPath(j.ID, "progress"), map[string]any{"fence": b.Fence, "stage": "B"})
			before := e.job(j.ID)
			for op, body := range map[string]map[string]any{
				"complete":  {"fence": a.Fence, "output": "A's"},
				"fail":      {"fence": a.Fence, "error": "A"},
				"snooze":    {"fence": a.Fence, "delay_ms": 1},
				"progress":  {"fence": a.Fence, "stage": "A"},
				"heartbeat": {"fence": a.Fence},
			} {
				r := e.fails(http.StatusConflict, codeStaleFence, "POST", jobPath(j.ID, op), body)
				if r.body["kind"] != "job" || r.body["name"] != fmt.Sprint(j.ID) || num(r, "your_fence") != a.Fence ||
					num(r, "current_fence") != b.Fence || r.body["current_owner"] != "B" || r.body["reason"] != "superseded" {
					t.Fatalf("A's %s = %s", op, r.raw)
				}
			}
			after := e.job(j.ID)
			if fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("the stale writes changed the job:\n%+v\n%+v", before, after)
			}
			e.ok("POST", jobPath(j.ID, "complete"), map[string]any{"fence": b.Fence, "output": "B's"})
			if h := e.job(j.ID); h.Job.State != fenced.JobSucceeded || string(h.Job.Output) != `"B's"` || h.Job.Owner != "B" {
				t.Fatalf("B's completion = %+v", h.Job)
			}
		})
		t.Run("WorkerWritesOnAMissingJobAreNotFound", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			for op, body := range map[string]map[string]any{
				"complete":  {"fence": 1},
				"fail":      {"fence": 1, "error": "x"},
				"snooze":    {"fence": 1, "delay_ms": 1},
				"progress":  {"fence": 1},
				"heartbeat": {"fence": 1},
			} {
				e.fails(http.StatusNotFound, codeNotFound, "POST", jobPath(77, op), body)
			}
			e.fails(http.StatusNotFound, codeNotFound, "GET", "/v1/jobs/77", nil)
		})
	})
}
