package pgdriver_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/testdb"
	"github.com/jackc/pgx/v5"
)

// lockedLease is a client of a fresh database whose lease "leader" exists,
// released, and a transaction that holds its row locked (FOR UPDATE), so
// that an acquire of it waits until unlock is called.
func lockedLease(t *testing.T, ctx context.Context) (c *fenced.Client, url string, unlock func()) {
	t.Helper()
	url = testdb.Postgres(t)
	c = migratedClientOf(t, url)
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
	t.Cleanup(func() { blocker.Close(context.Background()) })
	tx, err := blocker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM fenced_leases WHERE name = 'leader' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	unlock = func() {
		once.Do(func() {
			if err := tx.Rollback(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(unlock)
	return c, url, unlock
}

// campaign runs c.Campaign for the lease "leader" as owner "C" in a
// goroutine, under a context that stop ends; done gets what it returned.
func campaign(ctx context.Context, c *fenced.Client, ttl time.Duration, opts fenced.CampaignOptions,
	lead func(context.Context, fenced.Lease) error) (stop context.CancelFunc, done <-chan error) {
	cctx, stop := context.WithCancel(ctx)
	ch := make(chan error, 1)
	go func() { ch <- c.Campaign(cctx, "leader", "C", ttl, opts, lead) }()
	return stop, ch
}

// campaignResult waits for Campaign's result on done and wants
// context.Canceled.
func campaignResult(t *testing.T, ctx context.Context, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Campaign returned %v, want context.Canceled", err)
		}
	case <-ctx.Done():
		t.Fatal("Campaign did not return")
	}
}

// TestCampaignReleasesALeaseWonAfterItsContextEnded: a campaigner's acquire
// that is still running when Campaign's context ends is waited for, and the
// lease it won is released before Campaign returns — it is not left held
// until it expires, and lead never runs.
func TestCampaignReleasesALeaseWonAfterItsContextEnded(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, url, unlock := lockedLease(t, ctx)
	var led atomic.Bool
	stop, done := campaign(ctx, c, 5*time.Second, fenced.CampaignOptions{},
		func(context.Context, fenced.Lease) error { led.Store(true); return nil })
	defer stop()
	testdb.PostgresWaitBlocked(t, url)
	stop() // while the acquire waits for the row
	unlock()
	campaignResult(t, ctx, done)
	if led.Load() {
		t.Error("lead ran after the campaign's context ended")
	}
	if l, err := c.Leader(ctx, "leader"); err != nil || l != nil {
		t.Fatalf("after Campaign returned: leader %+v, %v; want none", l, err)
	}
}

// TestCampaignAcquireWaitsWhileItsContextLives: an acquire that waits for
// the lease's row longer than the bound Campaign puts on statements after
// its context ends is not cut off while the context lives: it wins once the
// row is free, with nothing logged.
func TestCampaignAcquireWaitsWhileItsContextLives(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, url, unlock := lockedLease(t, ctx)
	// Campaign logs on its own goroutine only, which has returned before
	// logged is read (campaignResult): no lock is needed.
	var logged strings.Builder
	led := make(chan struct{})
	ttl := time.Second // the bound after the context's end: min(ttl, 5s)
	stop, done := campaign(ctx, c, ttl, fenced.CampaignOptions{Logger: slog.New(slog.NewTextHandler(&logged, nil))},
		func(lctx context.Context, _ fenced.Lease) error { close(led); <-lctx.Done(); return nil })
	defer stop()
	testdb.PostgresWaitBlocked(t, url)
	time.Sleep(ttl + ttl/2) // the acquire waits past the bound
	unlock()
	select {
	case <-led:
	case <-ctx.Done():
		t.Fatal("lead never ran")
	}
	stop()
	campaignResult(t, ctx, done)
	if logged.Len() > 0 {
		t.Errorf("Campaign logged while its context lived:\n%s", logged.String())
	}
}

// TestCampaignGivesUpAnAcquireAfterItsContextEnded: an acquire still
// waiting when Campaign's context ends is cut off after the bound, so
// Campaign returns while the row is still locked instead of waiting for as
// long as it stays locked.
func TestCampaignGivesUpAnAcquireAfterItsContextEnded(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, url, unlock := lockedLease(t, ctx)
	stop, done := campaign(ctx, c, time.Second, fenced.CampaignOptions{},
		func(context.Context, fenced.Lease) error { return nil })
	defer stop()
	testdb.PostgresWaitBlocked(t, url)
	stop()
	campaignResult(t, ctx, done) // the row is still locked
	unlock()
}
