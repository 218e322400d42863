package drivertest

import (
	"errors"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// waitDBPast polls until the database clock is past t.
func (e *env) waitDBPast(t *testing.T, name string, at time.Time) *fenced.Lease {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := e.c.GetLease(ctx(t), name)
		wantNoErr(t, err, "get")
		if l.DecidedAt.After(at) {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("database clock never passed %s", at)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitDone(t *testing.T, k *fenced.Keeper) error {
	t.Helper()
	select {
	case <-k.Done():
		return k.Err()
	case <-time.After(10 * time.Second):
		t.Fatal("keeper did not end")
		return nil
	}
}

func runKeeper(t *testing.T, b Backend) {
	ttl := 3 * time.Second // generous: a loaded machine must not make a renewal miss the trust window
	t.Run("KeepsTheLeasePastItsTTL", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		k, err := e.c.Keep(ctx(t), "job", "A", ttl, fenced.KeepOptions{})
		wantNoErr(t, err, "keep")
		first := k.Lease()
		l := e.waitDBPast(t, "job", first.ExpiresAt.Add(ttl))
		if !l.Held || l.Owner != "A" || l.Fence != first.Fence || k.Err() != nil {
			t.Fatalf("after 2×ttl: lease %+v, keeper err %v", l, k.Err())
		}
		wantNoErr(t, k.Release(ctx(t)), "release")
		if l, _ := e.c.GetLease(ctx(t), "job"); l.Held {
			t.Fatalf("held after keeper release: %+v", l)
		}
		if !errors.Is(k.Err(), fenced.ErrKeeperStopped) {
			t.Fatalf("err after release = %v", k.Err())
		}
	})
	t.Run("LostWhenRenewalIsStale", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		k, err := e.c.Keep(ctx(t), "job", "A", ttl, fenced.KeepOptions{})
		wantNoErr(t, err, "keep")
		_, err = e.c.AdvanceFences(ctx(t), 10) // ends every lease
		wantNoErr(t, err, "advance")
		err = waitDone(t, k)
		if !errors.Is(err, fenced.ErrStale) {
			t.Fatalf("keeper ended with %v, want stale", err)
		}
		if k.Context().Err() == nil {
			t.Fatal("context not cancelled")
		}
	})
	t.Run("LostWhenTrustWindowRunsOut", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		k, err := e.c.Keep(ctx(t), "job", "A", ttl, fenced.KeepOptions{RenewEvery: time.Hour})
		wantNoErr(t, err, "keep")
		if err := waitDone(t, k); !errors.Is(err, fenced.ErrTrustExpired) {
			t.Fatalf("keeper ended with %v, want trust expired", err)
		}
	})
	t.Run("LostWhenARenewalBlocksPastTheTrustWindow", func(t *testing.T) {
		t.Parallel()
		b.needSQL(t) // a fenced transaction that holds the lease row
		e := setup(t, b)
		k, err := e.c.Keep(ctx(t), "job", "A", ttl, fenced.KeepOptions{})
		wantNoErr(t, err, "keep")
		// Another client's fenced transaction on the lease holds its row (on
		// SQLite, the write lock): the keeper's renewals wait behind it.
		other := e.b.open(t, e.url, fenced.Config{})
		release, held := make(chan struct{}), make(chan struct{})
		txDone := make(chan error, 1)
		go func() {
			txDone <- other.LeaseTx(ctx(t), k.Lease(), func(fenced.Tx) error {
				close(held)
				<-release
				return nil
			})
		}()
		<-held
		err = waitDone(t, k) // while the transaction is still open
		close(release)
		<-txDone
		if !errors.Is(err, fenced.ErrTrustExpired) {
			t.Fatalf("keeper ended with %v, want trust expired", err)
		}
	})
	t.Run("StopKeepsTheLeaseUntilExpiry", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		k, err := e.c.Keep(ctx(t), "job", "A", long, fenced.KeepOptions{})
		wantNoErr(t, err, "keep")
		k.Stop()
		if l, _ := e.c.GetLease(ctx(t), "job"); !l.Held || l.Owner != "A" {
			t.Fatalf("stop released the lease: %+v", l)
		}
		if !errors.Is(k.Err(), fenced.ErrKeeperStopped) {
			t.Fatalf("err = %v", k.Err())
		}
	})
	t.Run("KeepHeldByAnotherFails", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.acquire(t, "job", "B", long)
		_, err := e.c.Keep(ctx(t), "job", "A", ttl, fenced.KeepOptions{})
		wantErrIs(t, err, fenced.ErrHeld)
	})
}
