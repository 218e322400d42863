package sqlitedriver_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/sqlitedriver"
	"github.com/fenced/fenced/fencedtype"
)

// TestAnotherProcessWaitsOutALongFencedTx: while a fenced transaction is
// open a takeover blocks (docs/design.md §5), however long it lasts, as it does on
// the row lock of PostgreSQL. A writer of another process (here another
// driver on the same file: its own pool and writer slot) must wait for the
// transaction to end, not fail "database is locked" when busy_timeout (30 s)
// runs out. The wait still ends with the writer's context.
func TestAnotherProcessWaitsOutALongFencedTx(t *testing.T) {
	if testing.Short() {
		t.Skip("holds a transaction open for 32 s")
	}
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.db")
	d1 := openJobs(t, path)
	d2, err := sqlitedriver.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	l, err := d1.AcquireLease(ctx, driver.AcquireLeaseParams{Name: "a", Owner: "A", TTL: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	started, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- d1.LeaseTx(ctx, driver.LeaseRef{Name: l.Name, Owner: l.Owner, Fence: l.Fence}, func(driver.Tx) error {
			close(started)
			time.Sleep(32 * time.Second)
			return nil
		})
	}()
	<-started

	short, cancel := context.WithTimeout(ctx, time.Second)
	_, err = d2.AcquireLease(short, driver.AcquireLeaseParams{Name: "b", Owner: "B", TTL: time.Minute})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a waiter whose context ends: %v, want its deadline", err)
	}

	long, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err = d2.AcquireLease(long, driver.AcquireLeaseParams{Name: "a", Owner: "B", TTL: time.Minute})
	if !errors.Is(err, fencedtype.ErrHeld) {
		t.Fatalf("takeover after the fenced transaction: %v, want it to wait, then find the lease held", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
