package drivertest

import (
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runGenerations pins every lease check to the generation (fence), not just
// the owner: a client that re-acquires under the same owner name after its
// lease expired or was released holds a new generation, and a call carrying
// the older fence must be refused as stale without touching the new one
// (docs/design.md §2, §4, §5.1).
func runGenerations(t *testing.T, b Backend) {
	// twoGenerations returns generation 1 of "job" by owner A (expired) and
	// generation 2 of it, also by A, held for long.
	twoGenerations := func(t *testing.T, e *env) (old, cur *fenced.Lease) {
		t.Helper()
		old = e.acquire(t, "job", "A", b.ttl(50*time.Millisecond))
		e.waitExpired(t, "job")
		cur = e.acquire(t, "job", "A", long)
		wantFence(t, cur, 2)
		return old, cur
	}
	unchanged := func(t *testing.T, e *env, cur *fenced.Lease, what string) {
		t.Helper()
		got, err := e.c.GetLease(ctx(t), "job")
		wantNoErr(t, err, "get")
		if !got.Held || got.Released || got.Owner != "A" || got.Fence != cur.Fence || !got.ExpiresAt.Equal(cur.ExpiresAt) {
			t.Fatalf("%s by the old generation changed the current one: %+v, want %+v", what, got, cur)
		}
	}
	t.Run("RenewOfOlderGenerationOfSameOwnerIsStale", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		old, cur := twoGenerations(t, e)
		_, err := e.c.RenewLease(ctx(t), *old, 2*long)
		wantStale(t, err, 1, 2, "A", fenced.ReasonSuperseded)
		unchanged(t, e, cur, "renew")
	})
	t.Run("ReleaseOfOlderGenerationOfSameOwnerIsStale", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		old, cur := twoGenerations(t, e)
		wantStale(t, errOf(e.c.ReleaseLease(ctx(t), *old)), 1, 2, "A", fenced.ReasonSuperseded)
		unchanged(t, e, cur, "release")
	})
	t.Run("ReleaseOfReleasedGenerationAfterSameOwnerReacquireIsStale", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		old := e.acquire(t, "job", "A", long)
		wantNoErr(t, errOf(e.c.ReleaseLease(ctx(t), *old)), "release")
		cur := e.acquire(t, "job", "A", long)
		wantFence(t, cur, 2)
		wantStale(t, errOf(e.c.ReleaseLease(ctx(t), *old)), 1, 2, "A", fenced.ReasonSuperseded)
		unchanged(t, e, cur, "release")
	})
	t.Run("LeaseTxOfOlderGenerationOfSameOwnerIsStale", func(t *testing.T) {
		t.Parallel()
		b.needSQL(t)
		e := setup(t, b)
		b.Exec(t, e.url, bizDDL)
		old, cur := twoGenerations(t, e)
		called := false
		err := e.c.LeaseTx(ctx(t), *old, func(tx fenced.Tx) error {
			called = true
			return e.insertBiz(tx, "stale", 1)
		})
		wantStale(t, err, 1, 2, "A", fenced.ReasonSuperseded)
		if called {
			t.Fatal("fn ran under an older generation's fence")
		}
		if got := e.bizRows(t, *cur); len(got) != 0 {
			t.Fatalf("write under an older generation is visible: %v", got)
		}
		unchanged(t, e, cur, "lease tx")
	})
}
