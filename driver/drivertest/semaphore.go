package drivertest

import (
	"errors"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// The semaphore groups specify docs/design.md §4.7: N slots under one name,
// each grant with a fence from one counter per name, and every rule of a
// lease applied to one slot.

func (e *env) acquireSlot(t *testing.T, name, owner string, slots int, ttl time.Duration) *fenced.Slot {
	t.Helper()
	s, err := e.c.AcquireSlot(ctx(t), name, owner, slots, ttl)
	if err != nil {
		t.Fatalf("acquire a slot of %s by %s: %v", name, owner, err)
	}
	return s
}

// waitSlotFree polls the database clock until s is no longer held.
func (e *env) waitSlotFree(t *testing.T, s *fenced.Slot) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sem, err := e.c.GetSemaphore(ctx(t), s.Name)
		wantNoErr(t, err, "get semaphore")
		if holderOf(sem, s.Fence) == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("slot %d of %s (fence %d) still held at %s", s.Slot, s.Name, s.Fence, sem.DecidedAt)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// holderOf is the holder of sem with the given fence, or nil.
func holderOf(sem *fenced.Semaphore, fence int64) *fenced.Slot {
	for i := range sem.Holders {
		if sem.Holders[i].Fence == fence {
			return &sem.Holders[i]
		}
	}
	return nil
}

func wantGrant(t *testing.T, s *fenced.Slot, slot int, fence int64, owner string) {
	t.Helper()
	if s.Slot != slot || s.Fence != fence || s.Owner != owner || !s.Held || s.Released || !s.ExpiresAt.After(s.DecidedAt) {
		t.Fatalf("grant = %+v, want slot %d fence %d owner %s, held", s, slot, fence, owner)
	}
}

// wantAllHeld asserts err is the *HeldError of a semaphore with slots slots
// naming the holder whose grant runs out first.
func wantAllHeld(t *testing.T, err error, slots int, first *fenced.Slot) {
	t.Helper()
	var held *fenced.HeldError
	if !errors.As(err, &held) || !errors.Is(err, fenced.ErrHeld) {
		t.Fatalf("want *HeldError, got %v", err)
	}
	if held.Slots != slots || held.Owner != first.Owner || held.Fence != first.Fence || !held.ExpiresAt.Equal(first.ExpiresAt) {
		t.Fatalf("held = %+v, want %d slots, first to run out %s fence %d at %s", held, slots, first.Owner, first.Fence, first.ExpiresAt)
	}
}

// runAcquireSlot: a free slot is granted with the name's next fence, at most
// N are held, and the same owner re-acquiring keeps its grant only while it
// is unexpired and unreleased.
func runAcquireSlot(t *testing.T, b Backend) {
	t.Run("GrantsNSlotsWithIncreasingFencesThenHeld", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquireSlot(t, "pool", "A", 3, 2*long)
		bb := e.acquireSlot(t, "pool", "B", 3, long)
		c := e.acquireSlot(t, "pool", "C", 3, 3*long)
		wantGrant(t, a, 0, 1, "A")
		wantGrant(t, bb, 1, 2, "B")
		wantGrant(t, c, 2, 3, "C")
		got := a.ExpiresAt.Sub(a.DecidedAt)
		if got < 2*long-time.Second || got > 2*long+time.Second {
			t.Fatalf("expiry is %s after the decision, want about %s", got, 2*long)
		}
		_, err := e.c.AcquireSlot(ctx(t), "pool", "D", 3, long)
		wantAllHeld(t, err, 3, bb)
		sem, err := e.c.GetSemaphore(ctx(t), "pool")
		wantNoErr(t, err, "get")
		if sem.Slots != 3 || sem.Fence != 3 || len(sem.Holders) != 3 {
			t.Fatalf("refused acquire changed the semaphore: %+v", sem)
		}
		for i, h := range sem.Holders {
			want := []*fenced.Slot{a, bb, c}[i]
			if h.Slot != i || h.Owner != want.Owner || h.Fence != want.Fence || !h.Held || !h.ExpiresAt.Equal(want.ExpiresAt) {
				t.Fatalf("holder %d = %+v, want %+v", i, h, want)
			}
		}
	})
	t.Run("SameOwnerReacquireKeepsSlotAndFence", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquireSlot(t, "pool", "A", 2, time.Second)
		again := e.acquireSlot(t, "pool", "A", 2, long)
		wantGrant(t, again, 0, 1, "A")
		if !again.ExpiresAt.After(a.ExpiresAt) {
			t.Fatalf("re-acquire did not extend: %s then %s", a.ExpiresAt, again.ExpiresAt)
		}
		wantGrant(t, e.acquireSlot(t, "pool", "B", 2, long), 1, 2, "B")
	})
	t.Run("TakeoverAfterExpiryTakesTheSlotWithTheNextFence", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		// B first: A's short grant must not run out before B asks.
		e.acquireSlot(t, "pool", "B", 2, long)
		a := e.acquireSlot(t, "pool", "A", 2, 50*time.Millisecond)
		e.waitSlotFree(t, a)
		wantGrant(t, e.acquireSlot(t, "pool", "C", 2, long), a.Slot, 3, "C")
	})
	t.Run("SameOwnerAfterExpiryOrReleaseIsNewGrant", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquireSlot(t, "pool", "A", 2, 50*time.Millisecond)
		e.waitSlotFree(t, a)
		a2 := e.acquireSlot(t, "pool", "A", 2, long)
		wantGrant(t, a2, 0, 2, "A")
		wantNoErr(t, errOfSlot(e.c.ReleaseSlot(ctx(t), *a2)), "release")
		wantGrant(t, e.acquireSlot(t, "pool", "A", 2, long), 0, 3, "A")
	})
	t.Run("LastAcquireSetsTheNumberOfSlots", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.acquireSlot(t, "pool", "A", 2, long)
		e.acquireSlot(t, "pool", "B", 2, long)
		_, err := e.c.AcquireSlot(ctx(t), "pool", "C", 2, long)
		wantErrIs(t, err, fenced.ErrHeld)
		wantGrant(t, e.acquireSlot(t, "pool", "C", 3, long), 2, 3, "C")
		// Made smaller, it grants nothing while its holders outnumber it,
		// and its holders keep their grants.
		_, err = e.c.AcquireSlot(ctx(t), "pool", "D", 1, long)
		wantErrIs(t, err, fenced.ErrHeld)
		sem, err := e.c.GetSemaphore(ctx(t), "pool")
		wantNoErr(t, err, "get")
		if sem.Slots != 1 || len(sem.Holders) != 3 {
			t.Fatalf("after an acquire with 1 slot: %+v", sem)
		}
		wantGrant(t, e.acquireSlot(t, "pool", "C", 1, long), 2, 3, "C")
	})
	t.Run("SlotsOutsideOneToMaxAreInvalid", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for _, n := range []int{0, -1, fenced.MaxSlots + 1} {
			_, err := e.c.AcquireSlot(ctx(t), "pool", "A", n, long)
			wantErrIs(t, err, fenced.ErrInvalid)
		}
		_, err := e.c.GetSemaphore(ctx(t), "pool")
		wantErrIs(t, err, fenced.ErrNotFound)
	})
	t.Run("NamesOwnersAndTTLAreValidatedAsForLeases", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for _, tc := range []struct {
			name, owner string
			ttl         time.Duration
		}{{"", "A", long}, {"pool", "", long}, {"po\x00ol", "A", long}, {"pool", "A", 0}, {"pool", "A", fenced.MaxTTL + 1}} {
			_, errSlot := e.c.AcquireSlot(ctx(t), tc.name, tc.owner, 1, tc.ttl)
			_, errLease := e.c.AcquireLease(ctx(t), tc.name, tc.owner, tc.ttl)
			var is, il *fenced.InvalidError
			if !errors.As(errSlot, &is) || !errors.As(errLease, &il) || is.Reason != il.Reason {
				t.Fatalf("%+v: slot %v, lease %v: want the same invalid input", tc, errSlot, errLease)
			}
		}
	})
}

func errOfSlot(_ *fenced.Slot, err error) error { return err }

// runRenewSlot: only the current, unexpired, unreleased grant renews,
// keeping its fence; anything else is stale with the reason a lease gets.
func runRenewSlot(t *testing.T, b Backend) {
	t.Run("RenewExtendsAndKeepsFence", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.acquireSlot(t, "pool", "A", 2, long)
		s := e.acquireSlot(t, "pool", "B", 2, time.Second)
		r, err := e.c.RenewSlot(ctx(t), *s, long)
		wantNoErr(t, err, "renew")
		wantGrant(t, r, 1, 2, "B")
		if !r.ExpiresAt.After(s.ExpiresAt) {
			t.Fatalf("renew did not extend: %s then %s", s.ExpiresAt, r.ExpiresAt)
		}
	})
	t.Run("RenewAfterTakeoverIsSuperseded", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		// B first: A's short grant must not run out before B asks.
		e.acquireSlot(t, "pool", "B", 2, long)
		a := e.acquireSlot(t, "pool", "A", 2, 50*time.Millisecond)
		e.waitSlotFree(t, a)
		e.acquireSlot(t, "pool", "C", 2, long)
		_, err := e.c.RenewSlot(ctx(t), *a, long)
		wantStale(t, err, a.Fence, 3, "C", fenced.ReasonSuperseded)
		sem, _ := e.c.GetSemaphore(ctx(t), "pool")
		if h := holderOf(sem, 3); h == nil || h.Owner != "C" || h.Slot != a.Slot {
			t.Fatalf("stale renew changed the semaphore: %+v", sem)
		}
	})
	t.Run("RenewAfterExpiryIsExpired", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquireSlot(t, "pool", "A", 2, 50*time.Millisecond)
		e.waitSlotFree(t, a)
		_, err := e.c.RenewSlot(ctx(t), *a, long)
		wantStale(t, err, 1, 1, "", fenced.ReasonExpired)
		sem, _ := e.c.GetSemaphore(ctx(t), "pool")
		if len(sem.Holders) != 0 {
			t.Fatalf("renew after expiry revived the grant: %+v", sem)
		}
	})
	t.Run("RenewAfterReleaseIsReleased", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquireSlot(t, "pool", "A", 2, long)
		wantNoErr(t, errOfSlot(e.c.ReleaseSlot(ctx(t), *a)), "release")
		_, err := e.c.RenewSlot(ctx(t), *a, long)
		wantStale(t, err, 1, 1, "", fenced.ReasonReleased)
	})
	t.Run("UnknownSemaphoreIsNotFound", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.acquire(t, "ghost", "A", long) // a lease of the name is another thing
		ghost := fenced.Slot{Name: "ghost", Owner: "A", Fence: 1}
		_, err := e.c.RenewSlot(ctx(t), ghost, long)
		wantErrIs(t, err, fenced.ErrNotFound)
		wantErrIs(t, errOfSlot(e.c.ReleaseSlot(ctx(t), ghost)), fenced.ErrNotFound)
		wantErrIs(t, e.c.SlotTx(ctx(t), ghost, func(fenced.Tx) error { return nil }), fenced.ErrNotFound)
		_, err = e.c.GetSemaphore(ctx(t), "ghost")
		wantErrIs(t, err, fenced.ErrNotFound)
	})
}

// runReleaseSlot: a release frees the slot for the next grant, is
// idempotent for its own grant, and is stale once the slot was granted again.
func runReleaseSlot(t *testing.T, b Backend) {
	t.Run("ReleaseFreesTheSlotAndTheFenceContinues", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquireSlot(t, "pool", "A", 1, long)
		rel, err := e.c.ReleaseSlot(ctx(t), *a)
		wantNoErr(t, err, "release")
		if rel.Held || !rel.Released || rel.Owner != "A" || rel.Fence != 1 || rel.Slot != 0 ||
			rel.ExpiresAt.After(a.ExpiresAt) || rel.ExpiresAt.Before(a.DecidedAt) {
			t.Fatalf("release returned %+v; want released, no longer held, expiry between %v and %v", rel, a.DecidedAt, a.ExpiresAt)
		}
		wantNoErr(t, errOfSlot(e.c.ReleaseSlot(ctx(t), *a)), "second release")
		wantGrant(t, e.acquireSlot(t, "pool", "B", 1, long), 0, 2, "B")
		wantGrant(t, e.acquireSlot(t, "other", "B", 1, long), 0, 1, "B")
	})
	t.Run("ReleaseAfterTakeoverIsStale", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquireSlot(t, "pool", "A", 1, 50*time.Millisecond)
		e.waitSlotFree(t, a)
		bb := e.acquireSlot(t, "pool", "B", 1, long)
		wantStale(t, errOfSlot(e.c.ReleaseSlot(ctx(t), *a)), 1, 2, "B", fenced.ReasonSuperseded)
		sem, _ := e.c.GetSemaphore(ctx(t), "pool")
		if h := holderOf(sem, bb.Fence); h == nil || h.Owner != "B" {
			t.Fatalf("stale release freed the new holder's slot: %+v", sem)
		}
	})
}

// runSemaphoreStaleReasons: a refused write on a slot names what is wrong,
// as for a lease, on every path a holder writes through, and changes nothing.
func runSemaphoreStaleReasons(t *testing.T, b Backend) {
	t.Run("AnotherOwnerIsWrongOwner", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		b.Exec(t, e.url, bizDDL)
		a := e.acquireSlot(t, "pool", "A", 2, long)
		forged := *a
		forged.Owner = "B"
		for op, err := range e.slotWrites(t, forged) {
			wantStale(t, err, 1, 1, "A", fenced.ReasonWrongOwner)
			wantCallerOwner(t, op, err, "B")
		}
		e.wantSlotUnchanged(t, a)
	})
	t.Run("FenceAboveTheLastIsNeverGranted", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		b.Exec(t, e.url, bizDDL)
		a := e.acquireSlot(t, "pool", "A", 2, long)
		c := e.acquireSlot(t, "pool", "C", 2, long)
		forged := *a
		forged.Fence = 3
		for _, err := range e.slotWrites(t, forged) {
			wantStale(t, err, 3, 2, "C", fenced.ReasonNeverGranted)
		}
		e.wantSlotUnchanged(t, a)
		e.wantSlotUnchanged(t, c)
	})
	t.Run("ReleasedGrantIsReleased", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		b.Exec(t, e.url, bizDDL)
		a := e.acquireSlot(t, "pool", "A", 2, long)
		wantNoErr(t, errOfSlot(e.c.ReleaseSlot(ctx(t), *a)), "release")
		_, err := e.c.RenewSlot(ctx(t), *a, long)
		wantStale(t, err, 1, 1, "", fenced.ReasonReleased)
		err = e.c.SlotTx(ctx(t), *a, func(tx fenced.Tx) error { return e.insertBiz(tx, "late", 1) })
		wantStale(t, err, 1, 1, "", fenced.ReasonReleased)
	})
}

// slotWrites tries every write a holder of s makes (renew, release, and a
// SlotTx whose body must not run) and returns their errors by name.
func (e *env) slotWrites(t *testing.T, s fenced.Slot) map[string]error {
	t.Helper()
	out := map[string]error{}
	_, out["renew"] = e.c.RenewSlot(ctx(t), s, long)
	_, out["release"] = e.c.ReleaseSlot(ctx(t), s)
	called := false
	out["slot tx"] = e.c.SlotTx(ctx(t), s, func(tx fenced.Tx) error {
		called = true
		return e.insertBiz(tx, "refused", 1)
	})
	if called {
		t.Fatalf("SlotTx of %+v ran its body", s)
	}
	return out
}

// wantSlotUnchanged asserts the grant s is still held as it was granted.
func (e *env) wantSlotUnchanged(t *testing.T, s *fenced.Slot) {
	t.Helper()
	sem, err := e.c.GetSemaphore(ctx(t), s.Name)
	wantNoErr(t, err, "get")
	h := holderOf(sem, s.Fence)
	if h == nil || h.Owner != s.Owner || h.Slot != s.Slot || !h.ExpiresAt.Equal(s.ExpiresAt) {
		t.Fatalf("refused writes changed the grant: %+v, want %+v", sem, s)
	}
}

// runGetSemaphore: reads report the holders by the database clock.
func runGetSemaphore(t *testing.T, b Backend) {
	t.Run("ListOrdersByNameAndShowsHolders", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.acquireSlot(t, "b", "B1", 2, long)
		e.acquireSlot(t, "b", "B2", 2, long)
		a := e.acquireSlot(t, "a", "A", 3, long)
		wantNoErr(t, errOfSlot(e.c.ReleaseSlot(ctx(t), *a)), "release")
		ss, err := e.c.ListSemaphores(ctx(t))
		wantNoErr(t, err, "list")
		if len(ss) != 2 || ss[0].Name != "a" || ss[1].Name != "b" || ss[0].Slots != 3 || ss[1].Slots != 2 ||
			len(ss[0].Holders) != 0 || len(ss[1].Holders) != 2 || ss[1].Holders[0].Owner != "B1" || ss[1].Holders[1].Owner != "B2" ||
			ss[0].Fence != 1 || ss[1].Fence != 2 {
			t.Fatalf("list = %+v %+v", ss[0], ss[1])
		}
	})
	t.Run("ExpiredGrantIsNotAHolder", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquireSlot(t, "pool", "A", 2, 2*time.Second)
		sem, err := e.c.GetSemaphore(ctx(t), "pool")
		wantNoErr(t, err, "get")
		if holderOf(sem, a.Fence) == nil {
			t.Fatalf("holder missing right after acquire: %+v", sem)
		}
		e.waitSlotFree(t, a) // fails unless the read stops showing it
	})
}
