package pgdriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/test/testdb"
)

// Recovery reads only the leases that expired after its floor, and every
// minute all of them: an expired attempt its JobTx held while a
// sweep passed (the sweep skips locked rows), and whose lease is then below
// the next sweeps' floor, is taken back by the next full sweep.
func TestRecoverySweepsFromAFloorAndInFull(t *testing.T) {
	t.Cleanup(pgdriver.SetSweepMargin(50 * time.Millisecond))
	ctx := context.Background()
	d := migrated(t, testdb.Postgres(t))
	if _, err := d.Enqueue(ctx, nil, []driver.EnqueueParams{{Kind: "k", Queue: "q", Args: []byte(`{}`), MaxAttempts: 3}}); err != nil {
		t.Fatal(err)
	}
	jobs, err := d.ClaimJobs(ctx, driver.ClaimJobsParams{Queue: "q", Owner: "w", Limit: 1, TTL: 20 * time.Millisecond, Kinds: []string{"k"}})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v, %d jobs", err, len(jobs))
	}
	holder, err := d.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT 1 FROM fenced_jobs WHERE id = $1 FOR SHARE`, jobs[0].ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the lease expired more than the margin ago
	noBackoff := fencedtype.Backoff{Base: time.Millisecond, Max: time.Millisecond, Jitter: -1}
	recover := func(want int, why string) {
		t.Helper()
		if n, err := d.RecoverJobs(ctx, nil, 10, noBackoff); err != nil || n != want {
			t.Fatalf("%s: recovered %d (%v), want %d", why, n, err, want)
		}
	}
	recover(0, "a full sweep while the attempt's row is held")
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	recover(0, "a sweep from the floor")
	d.DueFullSweep()
	recover(1, "the next full sweep")
}
