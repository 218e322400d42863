package drivertest

import (
	"errors"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runSlotTx: a fenced transaction under a slot grant commits only while the
// grant is current, and a takeover of the slot waits for it (docs/design.md
// §4.7, §5.1).
func runSlotTx(t *testing.T, b Backend) {
	setupBiz := func(t *testing.T) *env {
		e := setup(t, b)
		b.Exec(t, e.url, bizDDL)
		return e
	}
	t.Run("CommitsUnderCurrentGrant", func(t *testing.T) {
		t.Parallel()
		e := setupBiz(t)
		e.acquireSlot(t, "pool", "A", 2, long)
		s := e.acquireSlot(t, "pool", "B", 2, long)
		err := e.c.SlotTx(ctx(t), *s, func(tx fenced.Tx) error { return e.insertBiz(tx, "b", 1) })
		wantNoErr(t, err, "slot tx")
		if got := e.bizRows(t, fenced.Lease{Name: "pool"}); got["b"] != 1 {
			t.Fatalf("business rows = %v", got)
		}
	})
	t.Run("ErrorFromFnRollsBack", func(t *testing.T) {
		t.Parallel()
		e := setupBiz(t)
		s := e.acquireSlot(t, "pool", "A", 2, long)
		boom := errors.New("boom")
		err := e.c.SlotTx(ctx(t), *s, func(tx fenced.Tx) error {
			if err := e.insertBiz(tx, "a", 1); err != nil {
				return err
			}
			return boom
		})
		wantErrIs(t, err, boom)
		if got := e.bizRows(t, fenced.Lease{Name: "pool"}); len(got) != 0 {
			t.Fatalf("rolled-back write is visible: %v", got)
		}
	})
	t.Run("PausedHolderWhoseSlotWasGrantedAgainIsRefused", func(t *testing.T) {
		t.Parallel()
		e := setupBiz(t)
		// B first, so that A's short grant cannot have run out before B
		// asks (B would then take A's slot).
		e.acquireSlot(t, "pool", "B", 2, long)
		a := e.acquireSlot(t, "pool", "A", 2, 50*time.Millisecond)
		e.waitSlotFree(t, a) // A "pauses" past its expiry
		c := e.acquireSlot(t, "pool", "C", 2, long)
		wantGrant(t, c, a.Slot, 3, "C")
		called := false
		err := e.c.SlotTx(ctx(t), *a, func(tx fenced.Tx) error {
			called = true
			return e.insertBiz(tx, "stale", 5)
		})
		wantStale(t, err, a.Fence, 3, "C", fenced.ReasonSuperseded)
		if called {
			t.Fatal("fn ran under a superseded grant")
		}
		_, err = e.c.RenewSlot(ctx(t), *a, long)
		wantStale(t, err, a.Fence, 3, "C", fenced.ReasonSuperseded)
		if got := e.bizRows(t, fenced.Lease{Name: "pool"}); len(got) != 0 {
			t.Fatalf("stale write is visible: %v", got)
		}
		wantNoErr(t, e.c.SlotTx(ctx(t), *c, func(tx fenced.Tx) error { return e.insertBiz(tx, "c", 3) }), "slot tx of C")
	})
	t.Run("AfterExpiryIsExpired", func(t *testing.T) {
		t.Parallel()
		e := setupBiz(t)
		a := e.acquireSlot(t, "pool", "A", 2, 50*time.Millisecond)
		e.waitSlotFree(t, a)
		err := e.c.SlotTx(ctx(t), *a, func(tx fenced.Tx) error { return e.insertBiz(tx, "late", 5) })
		wantStale(t, err, 1, 1, "", fenced.ReasonExpired)
	})
	t.Run("TakeoverWaitsForOpenSlotTx", func(t *testing.T) { t.Parallel(); slotTakeoverWaits(t, setupBiz(t)) })
}

// slotTakeoverWaits: while A's fenced transaction on its slot is open, C's
// takeover of that slot (from another client) blocks; it completes only
// after A commits, with the next fence; A's next fenced transaction is
// stale and writes nothing.
func slotTakeoverWaits(t *testing.T, e *env) {
	ttl := 300 * time.Millisecond
	other := e.b.open(t, e.url, fenced.Config{})
	a := e.acquireSlot(t, "pool", "A", 2, ttl)
	e.acquireSlot(t, "pool", "B", 2, long)

	inTx, commit := make(chan struct{}), make(chan struct{})
	txDone := make(chan error, 1)
	go func() {
		txDone <- e.c.SlotTx(ctx(t), *a, func(tx fenced.Tx) error {
			if err := e.insertBiz(tx, "a1", 1); err != nil {
				return err
			}
			close(inTx)
			<-commit
			return nil
		})
	}()
	select {
	case <-inTx:
	case err := <-txDone:
		t.Fatalf("slot tx ended early: %v", err)
	}
	e.waitSlotFree(t, a) // A's grant is over by the database clock; its tx is still open

	type result struct {
		s   *fenced.Slot
		err error
	}
	took := make(chan result, 1)
	go func() {
		s, err := other.AcquireSlot(ctx(t), "pool", "C", 2, long)
		took <- result{s, err}
	}()
	if e.b.WaitBlocked != nil {
		e.b.WaitBlocked(t, e.url)
	} else {
		time.Sleep(300 * time.Millisecond)
	}
	select {
	case r := <-took:
		t.Fatalf("takeover completed while the fenced transaction was open: %+v %v", r.s, r.err)
	default:
	}
	close(commit)
	wantNoErr(t, <-txDone, "fenced tx of A")
	r := <-took
	wantNoErr(t, r.err, "takeover by C")
	wantGrant(t, r.s, a.Slot, 3, "C")

	err := e.c.SlotTx(ctx(t), *a, func(tx fenced.Tx) error { return e.insertBiz(tx, "a2", 2) })
	wantStale(t, err, 1, 3, "C", fenced.ReasonSuperseded)
	got := e.bizRows(t, fenced.Lease{Name: "pool"})
	if len(got) != 1 || got["a1"] != 1 {
		t.Fatalf("business rows = %v, want only a1 (written while A was current)", got)
	}
}
