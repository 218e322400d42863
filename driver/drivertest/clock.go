package drivertest

import (
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runClockSkew repeats the lease rules with the client's own clock hours off
// in both directions: outcomes must not change, since the library never
// decides expiry with its own clock.
func runClockSkew(t *testing.T, b Backend) {
	for _, skew := range []time.Duration{-5 * time.Hour, 5 * time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			t.Parallel()
			base := setup(t, b)
			cfg := fenced.Config{Now: func() time.Time { return time.Now().Add(skew) }}
			e := &env{b: b, url: base.url, c: b.open(t, base.url, cfg)}

			short := 2 * time.Second // long enough that B's attempt below runs before it ends
			a := e.acquire(t, "job", "A", short)
			if d := a.ExpiresAt.Sub(a.DecidedAt); d != short {
				t.Fatalf("expiry - decision = %s, want the ttl", d)
			}
			if _, err := e.c.AcquireLease(ctx(t), "job", "B", long); err == nil {
				t.Fatal("B took a held lease")
			}
			e.waitExpired(t, "job")
			bl := e.acquire(t, "job", "B", long)
			wantFence(t, bl, 2)
			_, err := e.c.RenewLease(ctx(t), *a, long)
			wantStale(t, err, 1, 2, "B", fenced.ReasonSuperseded)

			ttl := 3 * time.Second
			k, err := e.c.Keep(ctx(t), "kept", "A", ttl, fenced.KeepOptions{})
			wantNoErr(t, err, "keep")
			l := e.waitDBPast(t, "kept", k.Lease().ExpiresAt.Add(ttl))
			if !l.Held || k.Err() != nil {
				t.Fatalf("skewed keeper lost its lease: %+v %v", l, k.Err())
			}
			k.Stop()
		})
	}
}

// runDatabaseTime: the clock reading the library reports is the one its
// decisions use (docs/design.md §3).
func runDatabaseTime(t *testing.T, b Backend) {
	t.Run("DatabaseTimeReadsTheClockDecisionsUse", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		l := e.acquire(t, "x", "A", long)
		now, err := e.c.DatabaseTime(ctx(t))
		wantNoErr(t, err, "database time")
		if now.Before(l.DecidedAt) || now.Sub(l.DecidedAt) > 10*time.Second {
			t.Fatalf("database time %s read after a decision at %s", now, l.DecidedAt)
		}
	})
}
