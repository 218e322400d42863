package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// setupNoClock serves dbURL through a backend whose clock cannot be read
// alone (noClock): an answer then carries a database time only if the
// statement that decided it returned one.
func setupNoClock(t *testing.T, dbURL string) *env {
	t.Helper()
	ctx := context.Background()
	d, err := fenced.OpenDriver(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	c := fenced.New(noClock{d.(sqlDriver)}, fenced.Config{})
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	srv, err := New(c, Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, c: c, srv: srv, ts: httptest.NewServer(srv)}
	t.Cleanup(func() { srv.Close(); e.ts.Close() })
	return e
}

// TestWorkerWritesAnswerWithTheirStatementsClock: heartbeat, progress,
// complete, fail and snooze answer with the reading their own statement
// made, and a stale one with the reading of the read that diagnosed it, so
// the server reads no clock of its own for them: over a backend whose clock
// cannot be read alone they still carry db_time (e.ok requires it). An
// end's db_time is its attempt's ended_at and the base of its run_at.
func TestWorkerWritesAnswerWithTheirStatementsClock(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		e := setupNoClock(t, db(t))
		done := e.enqueue(map[string]any{"kind": "k", "queue": "done"})
		c := e.claim("done", map[string]any{"owner": "w", "lease_ms": 60000})[0]
		hb := e.ok("POST", jobPath(c.ID, "heartbeat"), map[string]any{"fence": c.Fence, "lease_ms": 5000})
		exp, _ := time.Parse(time.RFC3339Nano, hb.body["lease_expires_at"].(string))
		if d := exp.Sub(e.wantDBTime(hb, "heartbeat")); d != 5*time.Second {
			t.Fatalf("heartbeat expiry - db_time = %s, want the lease", d)
		}
		e.ok("POST", jobPath(c.ID, "progress"), map[string]any{"fence": c.Fence, "stage": "half"})
		r := e.ok("POST", jobPath(c.ID, "complete"), map[string]any{"fence": c.Fence, "output": map[string]int{"n": 1}})
		if at, h := e.wantDBTime(r, "complete"), e.job(done.ID); !h.Attempts[0].EndedAt.Equal(at) {
			t.Fatalf("complete answered db_time %v, the attempt ended at %v", at, h.Attempts[0].EndedAt)
		}
		// The attempt is over: each of its writes is stale, stamped with the
		// diagnosis's reading.
		for op, body := range map[string]map[string]any{
			"complete":  {"fence": c.Fence},
			"fail":      {"fence": c.Fence, "error": "x"},
			"snooze":    {"fence": c.Fence, "delay_ms": 1},
			"progress":  {"fence": c.Fence},
			"heartbeat": {"fence": c.Fence},
		} {
			r := e.fails(http.StatusConflict, codeStaleFence, "POST", jobPath(c.ID, op), body)
			e.wantDBTime(r, "stale "+op)
		}
		for op, body := range map[string]map[string]any{
			"fail":   {"error": "x", "retry_in_ms": 90000},
			"snooze": {"delay_ms": 90000},
		} {
			j := e.enqueue(map[string]any{"kind": "k", "queue": op})
			c := e.claim(op, map[string]any{"owner": "w"})[0]
			body["fence"] = c.Fence
			at := e.wantDBTime(e.ok("POST", jobPath(c.ID, op), body), op)
			if h := e.job(j.ID); !h.Attempts[0].EndedAt.Equal(at) || h.Job.RunAt.Sub(at) != 90*time.Second {
				t.Fatalf("%s answered db_time %v; the attempt ended at %v, runs again at %v", op, at, h.Attempts[0].EndedAt, h.Job.RunAt)
			}
		}
	})
}
