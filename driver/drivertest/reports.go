package drivertest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runReports checks what the library reports for callers that stamp or
// count what the database decided (the HTTP service's db_time and metrics).
func runReports(t *testing.T, b Backend) {
	t.Run("JobsCarryTheReadingOfTheirStatement", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		before := e.acquire(t, "clock", "A", long).DecidedAt
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		c := e.claimOne(t, "w", long)
		got, _ := e.job(t, j.ID)
		cancelled, err := e.c.CancelJob(ctx(t), j.ID)
		wantNoErr(t, err, "cancel")
		listed, err := e.c.ListJobs(ctx(t), fenced.JobFilter{})
		wantNoErr(t, err, "list")
		prev := before
		for what, at := range map[string]time.Time{"enqueue": j.DecidedAt, "claim": c.DecidedAt,
			"get": got.DecidedAt, "cancel": cancelled.DecidedAt, "list": listed[0].DecidedAt} {
			if at.Before(prev) || at.Sub(prev) > time.Minute {
				t.Errorf("%s decided at %s, the lease before at %s", what, at, prev)
			}
		}
		// The claim's lease is measured from its own reading.
		if d := c.LeaseExpiresAt.Sub(c.DecidedAt); d <= 0 || d > long {
			t.Errorf("claim: lease expires %s after its decision, ttl %s", d, long)
		}
	})
	t.Run("MaintenanceReportsEachRound", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		var recovered, rounds atomic.Int64
		cfg := fenced.MaintenanceConfig{Every: 10 * time.Millisecond, Backoff: fenced.Backoff{Base: time.Hour},
			OnRound: func(r fenced.MaintenanceRound) { rounds.Add(1); recovered.Add(int64(r.Recovered)) }}
		m, err := e.c.StartMaintenance(context.Background(), cfg)
		wantNoErr(t, err, "start maintenance")
		defer m.Stop()
		for range 2 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		}
		e.claim(t, fenced.DefaultQueue, "w", 2, 20*time.Millisecond)
		deadline := time.Now().Add(20 * time.Second)
		for recovered.Load() < 2 {
			if time.Now().After(deadline) {
				t.Fatalf("after %d rounds, %d jobs reported recovered, want 2", rounds.Load(), recovered.Load())
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
		if n := recovered.Load(); n != 2 {
			t.Fatalf("%d jobs reported recovered, want 2 (each once)", n)
		}
	})
}
