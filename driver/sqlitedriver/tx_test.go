package sqlitedriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// TestPanicInFencedTxRollsBack: a panic in the caller's function (which a
// worker recovers from a handler) ends the fenced transaction at once, as an
// error does. Left open, it keeps SQLite's write lock until its context ends
// (never, for context.Background), and every later writer, the attempt's own
// failure write or a takeover included, fails with "database is locked".
func TestPanicInFencedTxRollsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := setupJobs(t)
	panicking := func(run func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Fatalf("fn did not panic")
			}
		}()
		run()
	}
	ref := claimOne(t, d, 3, "w", time.Minute)
	l, err := d.AcquireLease(ctx, driver.AcquireLeaseParams{Name: "a", Owner: "A", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}

	panicking(func() {
		d.JobTx(ctx, ref, func(driver.Tx) error { panic("handler bug") })
	})
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	errs, _, err := d.EndJobs(short, nil, []fencedtype.JobEnd{{Ref: ref, Kind: fencedtype.EndFail, Error: "panic"}})
	if err != nil || errs[0] != nil {
		t.Fatalf("fail the attempt after a panic in its JobTx: %v, %v", err, errs)
	}

	panicking(func() {
		d.LeaseTx(ctx, driver.LeaseRef{Name: l.Name, Owner: l.Owner, Fence: l.Fence}, func(driver.Tx) error { panic("handler bug") })
	})
	short2, cancel2 := context.WithTimeout(ctx, 3*time.Second)
	defer cancel2()
	if _, err := d.ReleaseLease(short2, driver.LeaseRef{Name: l.Name, Owner: l.Owner, Fence: l.Fence}); err != nil {
		t.Fatalf("release after a panic in its LeaseTx: %v", err)
	}
}
