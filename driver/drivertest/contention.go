package drivertest

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runContention: 16 goroutines over 4 clients fight for one lease for 2 s,
// writing the resource under each fence they win. Granted fences must be
// distinct and increase in grant order, and the resource must end with the
// value written under the highest fence.
func runContention(t *testing.T, b Backend) {
	t.Run("SixteenWorkersFightForOneLease", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		clients := []*fenced.Client{e.c}
		for range 3 {
			clients = append(clients, e.b.open(t, e.url, fenced.Config{}))
		}
		type grant struct {
			fence int64
			at    time.Time
			owner string
		}
		var (
			mu       sync.Mutex
			grants   []grant
			accepted []*fenced.ResourceWrite
			wg       sync.WaitGroup
		)
		// The workers run for 2 s, and on until 16 fences were granted, for at
		// most 30 s more: a backend whose TTLs are seconds (MinTTL) spends at
		// least one on each lease let expire below.
		start := time.Now()
		var highest atomic.Int64 // the highest fence granted: fences count grants from 1
		more := func() bool {
			return time.Since(start) < 2*time.Second || highest.Load() < 16 && time.Since(start) < 32*time.Second
		}
		for w := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, owner := clients[w%len(clients)], fmt.Sprintf("w%02d", w)
				for i := 0; more(); i++ {
					l, err := c.AcquireLease(ctx(t), "hot", owner, b.ttl(30*time.Millisecond))
					if errors.Is(err, fenced.ErrHeld) {
						continue
					}
					if err != nil {
						t.Errorf("acquire: %v", err)
						return
					}
					for f := highest.Load(); f < l.Fence && !highest.CompareAndSwap(f, l.Fence); f = highest.Load() {
					}
					value := fmt.Sprintf("%s@%d", owner, l.Fence)
					w, err := c.WriteResource(ctx(t), "out", []byte(value), l.Fence, fenced.WriteOptions{})
					if err != nil && !errors.Is(err, fenced.ErrStale) {
						t.Errorf("write: %v", err)
						return
					}
					mu.Lock()
					grants = append(grants, grant{l.Fence, l.DecidedAt, owner})
					if err == nil {
						accepted = append(accepted, w)
					}
					mu.Unlock()
					if i%3 != 0 { // else let it expire
						if _, err := c.ReleaseLease(ctx(t), *l); err != nil && !errors.Is(err, fenced.ErrStale) {
							t.Errorf("release: %v", err)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		// A holder that let its lease run may re-acquire it before expiry:
		// that keeps its fence and is not a new grant.
		sort.Slice(grants, func(i, j int) bool { return grants[i].fence < grants[j].fence })
		var distinct []grant
		for _, g := range grants {
			if n := len(distinct); n > 0 && distinct[n-1].fence == g.fence {
				if distinct[n-1].owner != g.owner {
					t.Fatalf("fence %d granted to %s and %s", g.fence, distinct[n-1].owner, g.owner)
				}
				continue
			}
			distinct = append(distinct, g)
		}
		if len(distinct) < 16 {
			t.Fatalf("only %d grants in %s", len(distinct), time.Since(start).Round(time.Millisecond))
		}
		for i := 1; i < len(distinct); i++ {
			if distinct[i].at.Before(distinct[i-1].at) {
				t.Fatalf("fence %d granted at %s, before fence %d at %s", distinct[i].fence, distinct[i].at, distinct[i-1].fence, distinct[i-1].at)
			}
		}
		sort.Slice(accepted, func(i, j int) bool { return accepted[i].Version < accepted[j].Version })
		for i := 1; i < len(accepted); i++ {
			if accepted[i].Fence < accepted[i-1].Fence {
				t.Fatalf("version %d accepted fence %d after fence %d", accepted[i].Version, accepted[i].Fence, accepted[i-1].Fence)
			}
		}
		top := distinct[len(distinct)-1]
		r, err := e.c.ReadResource(ctx(t), "out")
		wantNoErr(t, err, "read")
		if want := fmt.Sprintf("%s@%d", top.owner, top.fence); r.Fence != top.fence || string(r.Value) != want {
			t.Fatalf("resource = %s (fence %d), want %s", r.Value, r.Fence, want)
		}
		t.Logf("%d grants, %d accepted writes", len(distinct), len(accepted))
	})
}
