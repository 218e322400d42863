package server

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/testdb"
)

// TestHeartbeatOfABusyCurrentAttemptIsNotStale: on PostgreSQL a heartbeat
// skips a job row locked by a transaction of the same attempt (a JobTx, or
// a progress or final write in flight) and reports it Busy: still current,
// not extended this time. The service must not turn that into 409
// stale_fence (reason expired) for an attempt that is current and
// unexpired: the worker would abandon live work.
func TestHeartbeatOfABusyCurrentAttemptIsNotStale(t *testing.T) {
	t.Parallel()
	e := setup(t, testdb.Postgres(t), Config{})
	e.enqueue(map[string]any{"kind": "k"})
	j := e.claimOne("w", 60000)

	inTx, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- e.c.JobTx(context.Background(), fenced.JobRef{ID: j.ID, Fence: j.Fence}, func(fenced.Tx) error {
			close(inTx)
			<-release
			return nil
		})
	}()
	select {
	case <-inTx:
	case err := <-done:
		t.Fatalf("JobTx: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("JobTx did not start")
	}
	r := e.do("POST", fmt.Sprintf("/v1/jobs/%d/heartbeat", j.ID), map[string]any{"fence": j.Fence, "lease_ms": 60000})
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("JobTx: %v", err)
	}
	if r.status != http.StatusOK {
		t.Fatalf("heartbeat of the current attempt while its row is held: %d %s, want 200", r.status, r.raw)
	}
	if num(r, "fence") != j.Fence || r.body["lease_expires_at"] == nil {
		t.Fatalf("heartbeat reply %s", r.raw)
	}
	// The attempt is still the current one: it completes.
	e.ok("POST", fmt.Sprintf("/v1/jobs/%d/complete", j.ID), map[string]any{"fence": j.Fence})
}
