package pgdriver_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/testdb"
	"github.com/jackc/pgx/v5"
)

// TestCampaignReleasesALeaseWonAfterItsContextEnded: a campaigner's acquire
// that is still running when Campaign's context ends is waited for, and the
// lease it won is released before Campaign returns — it is not left held
// until it expires, and lead never runs. The acquire is held up by a
// transaction that locks the lease's row until after the context ended.
func TestCampaignReleasesALeaseWonAfterItsContextEnded(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := testdb.Postgres(t)
	c, err := fenced.Open(ctx, url, fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := c.AcquireLease(ctx, "leader", "first", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReleaseLease(ctx, *l); err != nil {
		t.Fatal(err)
	}

	blocker, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close(ctx)
	tx, err := blocker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM fenced_leases WHERE name = 'leader' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}

	cctx, stop := context.WithCancel(ctx)
	defer stop()
	var led atomic.Bool
	done := make(chan error, 1)
	go func() {
		done <- c.Campaign(cctx, "leader", "C", 5*time.Second, fenced.CampaignOptions{},
			func(context.Context, fenced.Lease) error { led.Store(true); return nil })
	}()
	testdb.PostgresWaitBlocked(t, url)
	stop()
	time.Sleep(50 * time.Millisecond) // let the context's end reach Campaign while its acquire waits
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Campaign returned %v, want context.Canceled", err)
		}
	case <-ctx.Done():
		t.Fatal("Campaign did not return")
	}
	if led.Load() {
		t.Error("lead ran after the campaign's context ended")
	}
	if l, err := c.Leader(ctx, "leader"); err != nil || l != nil {
		t.Fatalf("after Campaign returned: leader %+v, %v; want none", l, err)
	}
}
