package drivertest

import (
	"errors"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
)

// campaign is the driver's CampaignLease of name by owner for ttl, a
// refusal recording owner as waiting for wait.
func (e *env) campaign(t *testing.T, name, owner string, ttl, wait time.Duration) (*fenced.Lease, error) {
	t.Helper()
	return e.d.CampaignLease(ctx(t), driver.CampaignLeaseParams{
		AcquireLeaseParams: driver.AcquireLeaseParams{Name: name, Owner: owner, TTL: ttl}, Wait: wait})
}

// wantCampaignWon wants owner's campaign for name granted with fence.
func (e *env) wantCampaignWon(t *testing.T, name, owner string, fence int64) *fenced.Lease {
	t.Helper()
	l, err := e.campaign(t, name, owner, long, long)
	if err != nil {
		t.Fatalf("campaign of %s by %s: %v, want it granted with fence %d", name, owner, err, fence)
	}
	if l.Owner != owner || l.Fence != fence || !l.Held {
		t.Fatalf("campaign of %s by %s granted %+v, want fence %d held by it", name, owner, l, fence)
	}
	return l
}

// release releases l.
func (e *env) release(t *testing.T, l *fenced.Lease) {
	t.Helper()
	_, err := e.c.ReleaseLease(ctx(t), *l)
	wantNoErr(t, err, "release")
}

// runCampaignLease: a campaigner's acquire grants as AcquireLease does,
// except that a free lease is refused to its last holder while another
// campaigner's record of waiting lasts; a refusal records the campaigner;
// a grant deletes its own record; a record withdrawn or lapsed holds
// nothing back (docs/design.md §4.6).
func runCampaignLease(t *testing.T, b Backend) {
	t.Run("GrantsAsAcquireLeaseDoes", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.wantCampaignWon(t, "leader", "A", 1)
		e.wantCampaignWon(t, "leader", "A", 1) // held by A: extended, same fence
		_, err := e.campaign(t, "leader", "B", long, long)
		var he *fenced.HeldError
		if !errors.As(err, &he) || he.Owner != "A" || he.Fence != 1 {
			t.Fatalf("campaign of a held lease: %v, want *HeldError naming A, fence 1", err)
		}
		// A holds it still: B's record does not refuse A its own lease.
		e.wantCampaignWon(t, "leader", "A", 1)
	})
	t.Run("TheLastHolderYieldsToAWaiter", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.wantCampaignWon(t, "leader", "A", 1)
		wantErrIs(t, errOf(e.campaign(t, "leader", "B", long, long)), fenced.ErrHeld) // B waits from now
		e.release(t, a)
		// A released it: B is waiting, so A may not take it back.
		wantErrIs(t, errOf(e.campaign(t, "leader", "A", long, long)), driver.ErrWaitersFirst)
		if l, _ := e.c.Leader(ctx(t), "leader"); l != nil {
			t.Fatalf("leader %+v after A yielded, want none", l)
		}
		bl := e.wantCampaignWon(t, "leader", "B", 2)
		e.release(t, bl)
		// B's grant deleted its record; A's refusal recorded A: B yields.
		wantErrIs(t, errOf(e.campaign(t, "leader", "B", long, long)), driver.ErrWaitersFirst)
		e.wantCampaignWon(t, "leader", "A", 3)
	})
	t.Run("AnExpiredOrAdvancedLeaseIsYieldedToo", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		short := b.ttl(50 * time.Millisecond)
		if _, err := e.campaign(t, "leader", "A", short, long); err != nil {
			t.Fatal(err)
		}
		wantNoErr(t, e.d.AddLeaseWaiter(ctx(t), driver.LeaseWaiter{Name: "leader", Owner: "B", For: long}), "add waiter")
		e.waitExpired(t, "leader")
		wantErrIs(t, errOf(e.campaign(t, "leader", "A", long, long)), driver.ErrWaitersFirst)
		bl := e.wantCampaignWon(t, "leader", "B", 2)
		wantErrIs(t, errOf(e.campaign(t, "leader", "A", long, long)), fenced.ErrHeld)
		floor, err := e.c.AdvanceFences(ctx(t), 10) // ends B's lease
		wantNoErr(t, err, "advance")
		wantErrIs(t, errOf(e.campaign(t, "leader", "B", long, long)), driver.ErrWaitersFirst)
		if l := e.wantCampaignWon(t, "leader", "A", floor+1); l.Fence <= bl.Fence {
			t.Fatalf("fence %d after %d", l.Fence, bl.Fence)
		}
	})
	t.Run("AWithdrawnWaiterHoldsNothingBack", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.wantCampaignWon(t, "leader", "A", 1)
		wantErrIs(t, errOf(e.campaign(t, "leader", "B", long, long)), fenced.ErrHeld)
		wantNoErr(t, e.d.RemoveLeaseWaiter(ctx(t), "leader", "B"), "remove waiter")
		wantNoErr(t, e.d.RemoveLeaseWaiter(ctx(t), "leader", "B"), "remove a waiter again") // none: no error
		e.release(t, a)
		e.wantCampaignWon(t, "leader", "A", 2)
	})
	t.Run("ALapsedRecordHoldsNothingBack", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.wantCampaignWon(t, "leader", "A", 1)
		wantNoErr(t, e.d.AddLeaseWaiter(ctx(t), driver.LeaseWaiter{Name: "leader", Owner: "B", For: b.ttl(100 * time.Millisecond)}), "add waiter")
		e.release(t, a)
		// Refused while B's record lasts, however long this machine takes
		// to get here; granted once it lapsed.
		deadline := time.Now().Add(30 * time.Second)
		for {
			l, err := e.campaign(t, "leader", "A", long, long)
			if err == nil {
				if l.Fence != 2 || l.Owner != "A" {
					t.Fatalf("granted %+v, want fence 2 to A", l)
				}
				break
			}
			wantErrIs(t, err, driver.ErrWaitersFirst)
			if time.Now().After(deadline) {
				t.Fatal("B's record did not lapse")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	t.Run("AddLeaseWaiterRecordsAWaiter", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		// A record of a lease never acquired is kept, and refuses no one
		// who never held the lease.
		wantNoErr(t, e.d.AddLeaseWaiter(ctx(t), driver.LeaseWaiter{Name: "leader", Owner: "B", For: long}), "add waiter")
		a := e.wantCampaignWon(t, "leader", "A", 1)
		// The record replaces B's own: added twice, one removal ends it.
		wantNoErr(t, e.d.AddLeaseWaiter(ctx(t), driver.LeaseWaiter{Name: "leader", Owner: "B", For: long}), "add waiter again")
		e.release(t, a)
		wantErrIs(t, errOf(e.campaign(t, "leader", "A", long, long)), driver.ErrWaitersFirst)
		wantNoErr(t, e.d.RemoveLeaseWaiter(ctx(t), "leader", "B"), "remove waiter")
		// A's refusal recorded A: its own record does not hold it back.
		e.wantCampaignWon(t, "leader", "A", 2)
	})
	t.Run("AcquireLeaseIgnoresTheRecords", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.wantCampaignWon(t, "leader", "A", 1)
		wantErrIs(t, errOf(e.campaign(t, "leader", "B", long, long)), fenced.ErrHeld)
		e.release(t, a)
		wantFence(t, e.acquire(t, "leader", "A", long), 2)
	})
}
