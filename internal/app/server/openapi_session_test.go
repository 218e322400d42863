package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// sessionToken is the bearer token of the session's server.
const sessionToken = "openapi-session-token-0123456789"

// TestOpenAPISession runs a scripted session of every kind of request,
// successes and refusals, and validates each answer against the schema the
// document gives for its route and status; an answer whose status the
// document does not give for that route fails.
func TestOpenAPISession(t *testing.T) {
	t.Parallel()
	d := loadAPIDoc(t)
	eachDB(t, func(t *testing.T, db newDB) {
		e := setup(t, db(t), Config{Tokens: []string{sessionToken}, MaxBody: 4096})
		c := newChecker(t, e, d)
		obj := func(kv ...any) map[string]any {
			m := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		}

		// The open routes, without a token; the API refuses a request without one.
		e.token = ""
		c.call(200, "GET", "/healthz", nil)
		c.call(200, "GET", "/v1/openapi.json", nil)
		c.call(401, "GET", "/v1/leases", nil)
		e.token = sessionToken
		c.call(403, "POST", "/v1/leases/x/acquire", obj("owner", "A"), "Sec-Fetch-Site", "cross-site")

		// Leases: acquire, renew, get, list; held by another; stale renew; release.
		a := c.call(200, "POST", "/v1/leases/report/acquire", obj("owner", "A", "ttl_ms", 60000))
		fence := num(a, "fence")
		c.call(200, "POST", "/v1/leases/report/renew", obj("owner", "A", "fence", fence, "ttl_ms", 60000))
		c.call(200, "GET", "/v1/leases/report", nil)
		c.call(200, "GET", "/v1/leases", nil)
		c.call(409, "POST", "/v1/leases/report/acquire", obj("owner", "B"))
		if r := c.call(409, "POST", "/v1/leases/report/renew", obj("owner", "A", "fence", fence+1)); r.body["error"] != codeStaleFence {
			t.Fatalf("stale renew = %s", r.raw)
		}
		c.call(200, "POST", "/v1/leases/report/release", obj("owner", "A", "fence", fence))
		c.call(404, "GET", "/v1/leases/nothing", nil)
		c.call(404, "POST", "/v1/leases/nothing/renew", obj("owner", "A", "fence", 1))

		// Refusals before any statement: 400, 413, 415.
		c.call(400, "POST", "/v1/leases/report/acquire", obj("owner", "A", "ttl", 5))
		c.call(400, "POST", "/v1/leases/report/acquire", `{"owner": "A"} x`)
		c.call(400, "GET", "/v1/leases?name=report", nil)
		c.call(413, "PUT", "/v1/resources/big", obj("value", strings.Repeat("v", 5000), "fence", 1))
		c.call(415, "POST", "/v1/leases/report/acquire", obj("owner", "A"), "Content-Type", "text/plain")

		// Semaphores: a grant, a full semaphore, renew, get, list, release.
		g := c.call(200, "POST", "/v1/semaphores/pool/acquire", obj("owner", "A", "slots", 1, "ttl_ms", 60000))
		c.call(409, "POST", "/v1/semaphores/pool/acquire", obj("owner", "B", "slots", 1))
		c.call(200, "POST", "/v1/semaphores/pool/renew", obj("owner", "A", "fence", num(g, "fence")))
		c.call(409, "POST", "/v1/semaphores/pool/renew", obj("owner", "B", "fence", num(g, "fence")))
		c.call(200, "GET", "/v1/semaphores/pool", nil)
		c.call(200, "GET", "/v1/semaphores", nil)
		c.call(200, "POST", "/v1/semaphores/pool/release", obj("owner", "A", "fence", num(g, "fence")))
		c.call(404, "GET", "/v1/semaphores/nothing", nil)

		// Resources: write, a stale write, read; a value that is not UTF-8.
		c.call(200, "PUT", "/v1/resources/report", obj("value", "draft", "fence", 2, "operation_id", "op-1"))
		c.call(200, "PUT", "/v1/resources/report", obj("value", "draft", "fence", 2, "operation_id", "op-1"))
		if r := c.call(409, "PUT", "/v1/resources/report", obj("value", "late", "fence", 1)); r.body["kind"] != "resource" {
			t.Fatalf("stale write = %s", r.raw)
		}
		c.call(200, "GET", "/v1/resources/report", nil)
		if _, err := e.c.WriteResource(context.Background(), "bytes", []byte{0xff, 0xfe}, 1, fenced.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		if r := c.call(200, "GET", "/v1/resources/bytes", nil); r.body["value_base64"] != "//4=" {
			t.Fatalf("a value that is not UTF-8 = %s", r.raw)
		}
		c.call(404, "GET", "/v1/resources/nothing", nil)

		// Jobs: enqueue (new, existing), list, get, claim, heartbeat,
		// progress, complete, and the history.
		j := num(c.call(201, "POST", "/v1/jobs", obj("kind", "email", "args", obj("to", "ann"), "idempotency_key", "ann-1")), "id")
		c.call(200, "POST", "/v1/jobs", obj("kind", "email", "args", obj("to", "ann"), "idempotency_key", "ann-1"))
		c.call(200, "GET", "/v1/jobs", nil)
		c.call(200, "GET", "/v1/jobs?state=queued&limit=1", nil)
		c.call(200, "GET", fmt.Sprintf("/v1/jobs/%d", j), nil)
		var claimed claimOut
		e.decode(c.call(200, "POST", "/v1/queues/default/claim", obj("owner", "w1", "lease_ms", 60000)), &claimed)
		if len(claimed.Jobs) != 1 || claimed.Jobs[0].ID != j {
			t.Fatalf("claim = %+v", claimed)
		}
		jf := claimed.Jobs[0].Fence
		c.call(200, "POST", jobPath(j, "heartbeat"), obj("fence", jf, "lease_ms", 60000))
		c.call(200, "POST", jobPath(j, "progress"), obj("fence", jf, "stage", "sending", "counters", obj("sent", 1)))
		c.call(200, "POST", jobPath(j, "metadata"), obj("fence", jf, "patch", obj("step", 1)))
		c.call(200, "GET", fmt.Sprintf("/v1/jobs/%d", j), nil) // running, with progress
		c.call(200, "POST", jobPath(j, "complete"), obj("fence", jf, "output", obj("sent", true)))
		c.call(409, "POST", jobPath(j, "complete"), obj("fence", jf))
		c.call(200, "GET", fmt.Sprintf("/v1/jobs/%d", j), nil)
		c.call(200, "POST", "/v1/queues/default/claim", obj("owner", "w1")) // nothing left: empty
		c.call(400, "GET", "/v1/jobs?color=red", nil)
		c.call(400, "GET", "/v1/jobs/abc", nil)
		c.call(404, "GET", "/v1/jobs/999999", nil)
		c.call(404, "POST", jobPath(999999, "cancel"), nil)
		c.call(404, "DELETE", "/v1/jobs/999999", nil)
		gone := num(c.call(201, "POST", "/v1/jobs", obj("kind", "k", "queue", "deletes")), "id")
		if d := c.call(200, "DELETE", fmt.Sprintf("/v1/jobs/%d", gone), nil); d.body["deleted"] != true {
			t.Fatalf("delete = %s", d.raw)
		}
		c.call(404, "GET", fmt.Sprintf("/v1/jobs/%d", gone), nil)
		c.call(400, "DELETE", "/v1/jobs/x", nil)

		// A stale complete after a takeover: A's lease expires, recovery
		// takes the job back and B claims it.
		k := num(c.call(201, "POST", "/v1/jobs", obj("kind", "report", "queue", "slow")), "id")
		e.decode(c.call(200, "POST", "/v1/queues/slow/claim", obj("owner", "A", "lease_ms", 30)), &claimed)
		af := claimed.Jobs[0].Fence
		waitFor(t, "A's job to be recovered", func() bool {
			n, err := e.c.RecoverJobs(context.Background(), nil, 10, fenced.Backoff{Base: time.Millisecond, Max: time.Millisecond, Jitter: -1})
			return err == nil && n == 1
		})
		var bf int64
		waitFor(t, "B's claim", func() bool {
			e.decode(c.call(200, "POST", "/v1/queues/slow/claim", obj("owner", "B", "lease_ms", 60000)), &claimed)
			if len(claimed.Jobs) == 1 {
				bf = claimed.Jobs[0].Fence
			}
			return len(claimed.Jobs) == 1
		})
		for _, op := range []string{"complete", "heartbeat", "progress", "fail", "snooze"} {
			body := obj("fence", af)
			if op == "snooze" {
				body["delay_ms"] = 0
			}
			if r := c.call(409, "POST", jobPath(k, op), body); r.body["reason"] != string(fenced.ReasonSuperseded) {
				t.Fatalf("A's %s after the takeover = %s", op, r.raw)
			}
		}
		c.call(400, "POST", jobPath(k, "snooze"), obj("fence", bf))
		c.call(200, "POST", jobPath(k, "snooze"), obj("fence", bf, "delay_ms", 0))
		e.decode(c.call(200, "POST", "/v1/queues/slow/claim", obj("owner", "B", "kinds", []string{"report"})), &claimed)
		c.call(200, "POST", jobPath(k, "fail"), obj("fence", claimed.Jobs[0].Fence, "error", "gave up", "discard", true))
		c.call(200, "GET", fmt.Sprintf("/v1/jobs/%d", k), nil) // failed, three attempts
		c.call(200, "POST", jobPath(k, "retry"), nil)          // queued again
		c.call(409, "POST", jobPath(k, "retry"), obj())        // not failed or cancelled
		c.call(404, "POST", jobPath(999999, "retry"), nil)

		// Cancel: a queued job at once, a running one asked to stop, a
		// finished one refused.
		q := num(c.call(201, "POST", "/v1/jobs", obj("kind", "k", "queue", "cancels", "delay_ms", 60000)), "id")
		c.call(200, "POST", jobPath(q, "cancel"), nil)
		c.call(409, "POST", jobPath(q, "cancel"), obj())
		r := num(c.call(201, "POST", "/v1/jobs", obj("kind", "k", "queue", "cancels")), "id")
		e.decode(c.call(200, "POST", "/v1/queues/cancels/claim", obj("owner", "w")), &claimed)
		c.call(200, "POST", jobPath(r, "cancel"), nil)
		if hb := c.call(200, "POST", jobPath(r, "heartbeat"), obj("fence", claimed.Jobs[0].Fence)); hb.body["cancel_requested"] != true {
			t.Fatalf("heartbeat after a cancel = %s", hb.raw)
		}

		// Limits and slots.
		c.call(200, "PUT", "/v1/queues/mail/limit", obj("per_key", 2, "global", 10))
		c.call(200, "PUT", "/v1/queues/mail/kinds/email/limit", obj("global", 5))
		c.call(200, "PUT", "/v1/queues/mail/keys/acct-1/limit", obj("per_key", 1))
		c.call(400, "PUT", "/v1/queues/mail/keys/acct-1/limit", obj("global", 1))
		c.call(200, "GET", "/v1/limits", nil)
		c.call(200, "GET", "/v1/queues/mail/limits", nil)
		for range 2 {
			c.call(201, "POST", "/v1/jobs", obj("kind", "email", "queue", "mail", "concurrency_key", "acct-1"))
		}
		c.call(200, "POST", "/v1/queues/mail/claim", obj("owner", "w", "limit", 2))
		c.call(200, "GET", "/v1/slots", nil)
		c.call(200, "GET", "/v1/queues/mail/slots", nil)
		c.call(200, "DELETE", "/v1/queues/mail/keys/acct-1/limit", nil)
		c.call(200, "DELETE", "/v1/queues/mail/kinds/email/limit", nil)
		c.call(200, "DELETE", "/v1/queues/mail/limit", nil)
		c.call(404, "DELETE", "/v1/queues/mail/limit", nil)

		// Queues: pause (and again), a claim of the paused queue gets
		// nothing, the list, resume (and again), a bad name.
		c.call(201, "POST", "/v1/jobs", obj("kind", "k", "queue", "held"))
		if p := c.call(200, "POST", "/v1/queues/held/pause", nil); p.body["paused"] != true || p.body["changed"] != true {
			t.Fatalf("pause = %s", p.raw)
		}
		if p := c.call(200, "POST", "/v1/queues/held/pause", obj()); p.body["changed"] != false {
			t.Fatalf("pause again = %s", p.raw)
		}
		e.decode(c.call(200, "POST", "/v1/queues/held/claim", obj("owner", "w")), &claimed)
		if len(claimed.Jobs) != 0 {
			t.Fatalf("claim of a paused queue = %+v", claimed)
		}
		c.call(200, "GET", "/v1/pauses", nil)
		if p := c.call(200, "POST", "/v1/queues/held/resume", nil); p.body["paused"] != false || p.body["changed"] != true {
			t.Fatalf("resume = %s", p.raw)
		}
		if p := c.call(200, "POST", "/v1/queues/held/resume", obj()); p.body["changed"] != false {
			t.Fatalf("resume again = %s", p.raw)
		}
		c.call(400, "POST", "/v1/queues/-held/pause", nil)
		c.call(400, "GET", "/v1/pauses?queue=held", nil)

		// Workflows (501 on a backend without them).
		workflowSession(t, e, c, obj)

		// Last, as it throttles this client: wrong tokens, then 429.
		e.token = "wrong-session-token-0123456789"
		for range ClientGuesses {
			c.call(401, "GET", "/v1/leases", nil)
		}
		e.token = sessionToken
		if r := c.call(429, "GET", "/v1/leases", nil); r.header.Get("Retry-After") == "" {
			t.Fatalf("429 without Retry-After: %v", r.header)
		}

		if missed := c.unseen(); len(missed) > 0 {
			t.Errorf("the session got no answer from:\n\t%s", strings.Join(missed, "\n\t"))
		}
	})
}

// TestOpenAPIEveryDocumentedRouteAnswers sends every documented operation,
// its path filled in and with an empty object as the body where it takes
// one: the server's own route for it answers (not the 404 or 405 of an
// unknown route), with a status the document gives it and a body its
// schema takes.
func TestOpenAPIEveryDocumentedRouteAnswers(t *testing.T) {
	t.Parallel()
	d := loadAPIDoc(t)
	eachDB(t, func(t *testing.T, db newDB) {
		e := setup(t, db(t), Config{})
		c := newChecker(t, e, d)
		fill := strings.NewReplacer("{name}", "n", "{key}", "k", "{id}", "1", "{queue}", "q", "{kind}", "kind")
		for op := range d.operations() {
			method, path, _ := strings.Cut(op, " ")
			target := fill.Replace(path)
			if m, p := c.pattern(method, target); m+" "+p != op {
				t.Errorf("%s is taken by route %s %s", op, m, p)
				continue
			}
			var body any
			if o, _ := d.operation(method, path); o["requestBody"] != nil {
				body = map[string]any{}
			}
			r, err := e.send(method, target, body)
			if err != nil {
				t.Fatalf("%s: %v", op, err)
			}
			if r.status == http.StatusMethodNotAllowed {
				t.Errorf("%s: 405 %s", op, r.raw)
			}
			c.check(method, target, r)
		}
	})
}
