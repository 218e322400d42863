package drivertest

import (
	"errors"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

const long = time.Minute

// runAcquireLease: a free lease is granted with the next fence, a held one
// is refused with its holder, and the same owner re-acquiring keeps its
// generation only while it is unexpired and unreleased (docs/design.md §4.1).
func runAcquireLease(t *testing.T, b Backend) {
	t.Run("FirstAcquireGrantsFenceOne", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		l := e.acquire(t, "job", "A", long)
		wantFence(t, l, 1)
		if !l.Held || l.Owner != "A" || !l.ExpiresAt.After(l.DecidedAt) {
			t.Fatalf("lease = %+v", l)
		}
		got := l.ExpiresAt.Sub(l.DecidedAt)
		if got < long-time.Second || got > long+time.Second {
			t.Fatalf("expiry is %s after the decision, want about %s", got, long)
		}
	})
	t.Run("NoTakeoverBeforeExpiry", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquire(t, "job", "A", long)
		_, err := e.c.AcquireLease(ctx(t), "job", "B", long)
		var held *fenced.HeldError
		if !errors.As(err, &held) || !errors.Is(err, fenced.ErrHeld) {
			t.Fatalf("want *HeldError, got %v", err)
		}
		if held.Owner != "A" || held.Fence != 1 || !held.ExpiresAt.Equal(a.ExpiresAt) {
			t.Fatalf("held = %+v, want owner A fence 1 expiring %s", held, a.ExpiresAt)
		}
		cur, _ := e.c.GetLease(ctx(t), "job")
		if cur.Owner != "A" || cur.Fence != 1 || !cur.Held {
			t.Fatalf("refused acquire changed the lease: %+v", cur)
		}
	})
	t.Run("TakeoverAfterExpiryBumpsFence", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.acquire(t, "job", "A", b.ttl(50*time.Millisecond))
		e.waitExpired(t, "job")
		l := e.acquire(t, "job", "B", long)
		wantFence(t, l, 2)
		if l.Owner != "B" {
			t.Fatalf("owner = %s", l.Owner)
		}
	})
	t.Run("SameOwnerReacquireKeepsFence", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquire(t, "job", "A", time.Second)
		again := e.acquire(t, "job", "A", long)
		wantFence(t, again, 1)
		if !again.ExpiresAt.After(a.ExpiresAt) {
			t.Fatalf("re-acquire did not extend: %s then %s", a.ExpiresAt, again.ExpiresAt)
		}
	})
	t.Run("SameOwnerReacquireAfterExpiryIsNewGeneration", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.acquire(t, "job", "A", b.ttl(50*time.Millisecond))
		e.waitExpired(t, "job")
		wantFence(t, e.acquire(t, "job", "A", long), 2)
	})
	t.Run("SameOwnerAcquireAfterReleaseIsNewGeneration", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquire(t, "job", "A", long)
		wantNoErr(t, errOf(e.c.ReleaseLease(ctx(t), *a)), "release")
		wantFence(t, e.acquire(t, "job", "A", long), 2)
	})
}

// runRenewLease: only the current, unexpired, unreleased generation renews,
// keeping its fence; anything else is stale with the reason (docs/design.md §4.2).
func runRenewLease(t *testing.T, b Backend) {
	t.Run("RenewExtendsAndKeepsFence", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquire(t, "job", "A", time.Second)
		r, err := e.c.RenewLease(ctx(t), *a, long)
		wantNoErr(t, err, "renew")
		wantFence(t, r, 1)
		if !r.ExpiresAt.After(a.ExpiresAt) || !r.Held {
			t.Fatalf("renew = %+v", r)
		}
	})
	t.Run("RenewAfterTakeoverIsStale", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquire(t, "job", "A", b.ttl(50*time.Millisecond))
		e.waitExpired(t, "job")
		e.acquire(t, "job", "B", long)
		_, err := e.c.RenewLease(ctx(t), *a, long)
		wantStale(t, err, 1, 2, "B", fenced.ReasonSuperseded)
		cur, _ := e.c.GetLease(ctx(t), "job")
		if cur.Owner != "B" || cur.Fence != 2 || !cur.Held {
			t.Fatalf("stale renew changed the lease: %+v", cur)
		}
	})
	t.Run("RenewAfterExpiryIsStale", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquire(t, "job", "A", b.ttl(50*time.Millisecond))
		e.waitExpired(t, "job")
		_, err := e.c.RenewLease(ctx(t), *a, long)
		wantStale(t, err, 1, 1, "", fenced.ReasonExpired)
		cur, _ := e.c.GetLease(ctx(t), "job")
		if cur.Held {
			t.Fatalf("renew after expiry revived the lease: %+v", cur)
		}
	})
	t.Run("RenewAfterReleaseIsStale", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquire(t, "job", "A", long)
		wantNoErr(t, errOf(e.c.ReleaseLease(ctx(t), *a)), "release")
		_, err := e.c.RenewLease(ctx(t), *a, long)
		wantStale(t, err, 1, 1, "", fenced.ReasonReleased)
	})
}

// runReleaseLease: a release keeps the row and its fence, is idempotent for
// its own generation, and is stale once another generation exists
// (docs/design.md §4.3).
func runReleaseLease(t *testing.T, b Backend) {
	t.Run("ReleaseKeepsRowAndNextGrantContinues", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquire(t, "job", "A", long)
		rel, err := e.c.ReleaseLease(ctx(t), *a)
		wantNoErr(t, err, "release")
		if rel.Held || !rel.Released || rel.Owner != "A" || rel.Fence != 1 || rel.ExpiresAt.After(a.ExpiresAt) ||
			rel.ExpiresAt.Before(a.DecidedAt) {
			t.Fatalf("release returned %+v; want released, no longer held, expiry between %v and %v", rel, a.DecidedAt, a.ExpiresAt)
		}
		cur, err := e.c.GetLease(ctx(t), "job")
		wantNoErr(t, err, "get after release")
		if cur.Held || !cur.Released || cur.Fence != 1 {
			t.Fatalf("after release = %+v", cur)
		}
		wantFence(t, e.acquire(t, "job", "B", long), 2)
		wantFence(t, e.acquire(t, "other", "B", long), 1)
	})
	t.Run("ReleaseTwiceIsFine", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquire(t, "job", "A", long)
		wantNoErr(t, errOf(e.c.ReleaseLease(ctx(t), *a)), "first release")
		wantNoErr(t, errOf(e.c.ReleaseLease(ctx(t), *a)), "second release")
	})
	t.Run("ReleaseAfterTakeoverIsStale", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquire(t, "job", "A", b.ttl(50*time.Millisecond))
		e.waitExpired(t, "job")
		e.acquire(t, "job", "B", long)
		wantStale(t, errOf(e.c.ReleaseLease(ctx(t), *a)), 1, 2, "B", fenced.ReasonSuperseded)
		cur, _ := e.c.GetLease(ctx(t), "job")
		if !cur.Held || cur.Owner != "B" {
			t.Fatalf("stale release freed the new owner's lease: %+v", cur)
		}
	})
	t.Run("ReleaseByWrongOwnerIsStale", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquire(t, "job", "A", long)
		forged := *a
		forged.Owner = "B"
		wantStale(t, errOf(e.c.ReleaseLease(ctx(t), forged)), 1, 1, "A", fenced.ReasonWrongOwner)
	})
}

// runGetLease: a read reports whether the lease is held now by the database
// clock; a name never acquired is not found, for reads and writes alike
// (docs/design.md §4.4).
func runGetLease(t *testing.T, b Backend) {
	t.Run("UnknownLeaseIsNotFound", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		ghost := fenced.Lease{Name: "ghost", Owner: "A", Fence: 1}
		_, err := e.c.RenewLease(ctx(t), ghost, long)
		wantErrIs(t, err, fenced.ErrNotFound)
		wantErrIs(t, errOf(e.c.ReleaseLease(ctx(t), ghost)), fenced.ErrNotFound)
		_, err = e.c.GetLease(ctx(t), "ghost")
		wantErrIs(t, err, fenced.ErrNotFound)
	})
	t.Run("IsHolderFollowsTheDatabase", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		// Long enough that the check right after cannot miss it on a loaded
		// machine; the wait for expiry below is what this costs.
		a := e.acquire(t, "job", "A", 2*time.Second)
		ok, err := e.c.IsHolder(ctx(t), *a)
		if err != nil || !ok {
			t.Fatalf("holder right after acquire = %v, %v", ok, err)
		}
		e.waitExpired(t, "job")
		if ok, _ := e.c.IsHolder(ctx(t), *a); ok {
			t.Fatal("still holder after expiry")
		}
	})
}

// runListLeases: every lease, by name, each with whether it is held.
func runListLeases(t *testing.T, b Backend) {
	t.Run("ListOrdersByNameAndShowsHolding", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.acquire(t, "b", "B", long)
		a := e.acquire(t, "a", "A", long)
		wantNoErr(t, errOf(e.c.ReleaseLease(ctx(t), *a)), "release")
		ls, err := e.c.ListLeases(ctx(t))
		wantNoErr(t, err, "list")
		if len(ls) != 2 || ls[0].Name != "a" || ls[1].Name != "b" || ls[0].Held || !ls[1].Held {
			t.Fatalf("list = %+v %+v", ls[0], ls[1])
		}
	})
}
