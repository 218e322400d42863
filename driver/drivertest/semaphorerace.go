package drivertest

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runSemaphore: the cross-cutting rules of semaphores — racing acquirers
// never share a slot or exceed N, N = 1 is a lease, and a fence advance
// ends every grant (docs/design.md §4.7, §7).
func runSemaphore(t *testing.T, b Backend) {
	t.Run("RacingAcquirersNeverExceedN", func(t *testing.T) { t.Parallel(); slotRace(t, setup(t, b)) })
	t.Run("OneSlotBehavesAsALease", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		b.Exec(t, e.url, bizDDL)
		// The same story, told to a lease and to a semaphore of one slot,
		// gets the same fences, holders and refusals.
		la := e.acquire(t, "one", "A", time.Second)
		sa := e.acquireSlot(t, "one", "A", 1, time.Second)
		if sa.Fence != la.Fence || sa.Slot != 0 {
			t.Fatalf("first grant: slot %+v, lease %+v", sa, la)
		}
		_, errL := e.c.AcquireLease(ctx(t), "one", "B", long)
		_, errS := e.c.AcquireSlot(ctx(t), "one", "B", 1, long)
		var hl, hs *fenced.HeldError
		if !errors.As(errL, &hl) || !errors.As(errS, &hs) || hl.Owner != hs.Owner || hl.Fence != hs.Fence {
			t.Fatalf("held: lease %v, slot %v", errL, errS)
		}
		e.waitExpired(t, "one")
		e.waitSlotFree(t, sa)
		for _, err := range []error{errOf(e.c.RenewLease(ctx(t), *la, long)), errOfSlot(e.c.RenewSlot(ctx(t), *sa, long))} {
			wantStale(t, err, 1, 1, "", fenced.ReasonExpired)
		}
		lb := e.acquire(t, "one", "B", long)
		sb := e.acquireSlot(t, "one", "B", 1, long)
		if lb.Fence != 2 || sb.Fence != 2 || sb.Slot != 0 {
			t.Fatalf("takeover: lease fence %d, slot %+v", lb.Fence, sb)
		}
		leaseErrs, slotErrs := e.leaseWrites(t, *la), e.slotWrites(t, *sa)
		for op, err := range leaseErrs {
			wantStale(t, err, 1, 2, "B", fenced.ReasonSuperseded)
			if op == "lease tx" {
				op = "slot tx"
			}
			wantStale(t, slotErrs[op], 1, 2, "B", fenced.ReasonSuperseded)
		}
		if got := e.bizRows(t, *la); len(got) != 0 {
			t.Fatalf("a superseded holder committed %v", got)
		}
	})
	t.Run("ResourceWritesUnderDifferentSlotsAreOrderedByFence", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquireSlot(t, "pool", "A", 2, long)
		c := e.acquireSlot(t, "pool", "C", 2, long)
		w, err := e.c.WriteResource(ctx(t), "out", []byte("C"), c.Fence, fenced.WriteOptions{})
		wantNoErr(t, err, "write under C's slot")
		// A still holds its slot, but its grant is older than C's: on a
		// key both write, the later grant's write stands.
		_, err = e.c.WriteResource(ctx(t), "out", []byte("A"), a.Fence, fenced.WriteOptions{})
		var se *fenced.StaleError
		if !errors.As(err, &se) || se.Reason != fenced.ReasonSuperseded || se.CurrentFence != c.Fence {
			t.Fatalf("write under the older grant: %v, want superseded by fence %d", err, c.Fence)
		}
		r, err := e.c.ReadResource(ctx(t), "out")
		wantNoErr(t, err, "read")
		if string(r.Value) != "C" || r.Fence != c.Fence || r.Version != w.Version {
			t.Fatalf("resource = %+v, want C's write", r)
		}
	})
	t.Run("AdvanceFencesEndsEveryGrant", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		b.Exec(t, e.url, bizDDL)
		a := e.acquireSlot(t, "pool", "A", 2, long)
		e.acquireSlot(t, "pool", "B", 2, long)
		for range 5 { // semaphore fences count toward the floor
			s := e.acquireSlot(t, "busy", "C", 1, long)
			wantNoErr(t, errOfSlot(e.c.ReleaseSlot(ctx(t), *s)), "release")
		}
		floor, err := e.c.AdvanceFences(ctx(t), 100)
		wantNoErr(t, err, "advance")
		if floor != 5+100 {
			t.Fatalf("floor = %d, want the largest fence 5 + 100", floor)
		}
		for _, err := range e.slotWrites(t, *a) {
			if errors.Is(err, fenced.ErrStale) {
				var se *fenced.StaleError
				errors.As(err, &se)
				if se.Reason == fenced.ReasonSuperseded && se.CurrentFence == floor {
					continue
				}
			}
			t.Fatalf("a write of a grant ended by the advance: %v, want superseded by the floor %d", err, floor)
		}
		sem, err := e.c.GetSemaphore(ctx(t), "pool")
		wantNoErr(t, err, "get")
		if len(sem.Holders) != 0 || sem.Fence != floor {
			t.Fatalf("after the advance: %+v", sem)
		}
		wantGrant(t, e.acquireSlot(t, "pool", "B", 2, long), 0, floor+1, "B")
		wantGrant(t, e.acquireSlot(t, "new", "B", 2, long), 0, floor+1, "B")
		if got := e.bizRows(t, fenced.Lease{Name: "pool"}); len(got) != 0 {
			t.Fatalf("an ended grant committed %v", got)
		}
	})
}

// slotRace: 16 goroutines over 4 clients race for 3 slots for 2 s, holding
// each grant briefly and then releasing it or letting it expire. Every grant
// must be below N, carry a fence no other grant had, and begin, by the
// database clock, no earlier than the previous grant of its slot ended: so
// at no moment are more than N held. Fences must rise in grant order.
func slotRace(t *testing.T, e *env) {
	const slots = 3
	clients := []*fenced.Client{e.c}
	for range 3 {
		clients = append(clients, e.b.open(t, e.url, fenced.Config{}))
	}
	type grant struct {
		slot    int
		owner   string
		decided time.Time
		end     time.Time // the expiry, or when released
	}
	var (
		mu     sync.Mutex
		grants = map[int64]*grant{}
		wg     sync.WaitGroup
	)
	stop := time.Now().Add(2 * time.Second)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, owner := clients[w%len(clients)], fmt.Sprintf("w%02d", w)
			for i := 0; time.Now().Before(stop); i++ {
				s, err := c.AcquireSlot(ctx(t), "hot", owner, slots, 30*time.Millisecond)
				if errors.Is(err, fenced.ErrHeld) {
					continue
				}
				if err != nil {
					t.Errorf("acquire: %v", err)
					return
				}
				mu.Lock()
				g := grants[s.Fence]
				switch {
				case g == nil:
					grants[s.Fence] = &grant{s.Slot, owner, s.DecidedAt, s.ExpiresAt}
				case g.owner != owner || g.slot != s.Slot:
					t.Errorf("fence %d granted to %s at slot %d and to %s at slot %d", s.Fence, g.owner, g.slot, owner, s.Slot)
				case s.ExpiresAt.After(g.end): // the same owner's grant, extended
					g.end = s.ExpiresAt
				}
				mu.Unlock()
				if i%3 != 0 { // else let it expire
					r, err := c.ReleaseSlot(ctx(t), *s)
					if err != nil && !errors.Is(err, fenced.ErrStale) {
						t.Errorf("release: %v", err)
						return
					}
					if err == nil {
						mu.Lock()
						grants[s.Fence].end = r.ExpiresAt
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	fences := make([]int64, 0, len(grants))
	for f := range grants {
		fences = append(fences, f)
	}
	sort.Slice(fences, func(i, j int) bool { return fences[i] < fences[j] })
	if len(fences) < 10 {
		t.Fatalf("only %d grants in 2 s: the race did not run", len(fences))
	}
	last := map[int]int64{} // slot → fence of its previous grant
	for i, f := range fences {
		g := grants[f]
		if g.slot < 0 || g.slot >= slots {
			t.Fatalf("fence %d granted slot %d of %d", f, g.slot, slots)
		}
		if i > 0 && g.decided.Before(grants[fences[i-1]].decided) {
			t.Fatalf("fence %d decided at %s, before fence %d at %s", f, g.decided, fences[i-1], grants[fences[i-1]].decided)
		}
		if p, ok := last[g.slot]; ok && g.decided.Before(grants[p].end) {
			t.Fatalf("slot %d granted with fence %d at %s while fence %d held it until %s",
				g.slot, f, g.decided, p, grants[p].end)
		}
		last[g.slot] = f
	}
	sem, err := e.c.GetSemaphore(ctx(t), "hot")
	wantNoErr(t, err, "get")
	if sem.Fence != fences[len(fences)-1] || len(sem.Holders) > slots {
		t.Fatalf("semaphore %+v after the race, last fence granted %d", sem, fences[len(fences)-1])
	}
}
