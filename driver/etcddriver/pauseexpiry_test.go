package etcddriver_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/etcddriver"
	"github.com/fenced/fenced/internal/test/testetcd"
)

// Expiry across a leader pause, checked with TTLs longer than the 6 s
// expiry slack the linearizability runs around a leader change allow
// (TestLinearizabilityWhileLeaderPaused): with their TTLs of 1–2 s those
// runs check fences, owners and the resource across the pause, but any
// expiry within the slack passes. The linearizability model's slack is the
// same either way, while a leader change moves an etcd lease's end later
// only, by up to a TTL: so this test checks expiry directly, per
// generation, each side as tightly as etcd allows.
//
//   - Never early, exactly: ExpiresAt is the earliest the cluster can end
//     the lease (its TTL starts when the grant or keep-alive is applied,
//     after ExpiresAt's clock reading). A read that returned before
//     ExpiresAt must find it held, and a takeover must be decided at or
//     after it. A driver that granted a shorter etcd lease, renewed one it
//     did not keep alive, or reported a later expiry than the cluster's,
//     fails here.
//   - Late by no more than etcd's leader change explains: a new leader
//     gives every lease its full TTL again plus the election timeout, from
//     when it took over (no later than the test saw the new term); a lease
//     refreshed after the last change ends by its TTL. The lease must be
//     seen free, and taken over, by the later of ExpiresAt and that change
//     plus a TTL plus the election timeout, with lateSlack for the
//     lessor's 500 ms checks, the raft write of the deletion and the shared
//     machine. A held key on no etcd lease, or an etcd lease of twice the
//     TTL, fails here.
//
// The leader is frozen (SIGSTOP) for 3 s while four generations are held
// (two of them renewed just before the pause), and another member must lead
// meanwhile; two more are granted once it woke, one of them renewed 2 s
// later. Every generation is watched by a reader and a contender until the
// contender takes it over.
func TestExpiryAcrossLeaderPause(t *testing.T) {
	pc, err := testetcd.StartProcesses(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pc.Close)
	d, err := etcddriver.Open(ctx(t), pc.URL())
	if err != nil {
		t.Fatal(err)
	}
	c := fenced.New(d, fenced.Config{})
	t.Cleanup(func() { c.Close(); d.Close() })

	terms := watchTerms(t, pc)
	var mu sync.Mutex
	var watched []*watchedLease
	var wg sync.WaitGroup
	hold := func(name string) *fenced.Lease {
		l, err := c.AcquireLease(ctx(t), name, "A", expiryTTL)
		if err != nil {
			t.Fatalf("acquire %s: %v", name, err)
		}
		return l
	}
	watch := func(w *watchedLease) {
		mu.Lock()
		watched = append(watched, w)
		mu.Unlock()
		wg.Go(func() { w.watch(c) })
	}
	var before []*fenced.Lease
	for i := range 4 {
		before = append(before, hold(fmt.Sprintf("before-%d", i)))
		time.Sleep(300 * time.Millisecond)
	}
	for i, l := range before {
		w := &watchedLease{name: l.Name, fence: l.Fence, told: l.ExpiresAt, refreshed: l.DecidedAt}
		if i < 2 {
			r, err := c.RenewLease(ctx(t), *l, expiryTTL)
			if err != nil {
				t.Fatalf("renew %s: %v", l.Name, err)
			}
			w.told, w.refreshed = r.ExpiresAt, r.DecidedAt
		}
		watch(w)
	}

	leader := -1
	for deadline := time.Now().Add(10 * time.Second); leader < 0 && time.Now().Before(deadline); leader = pc.Leader() {
		time.Sleep(50 * time.Millisecond)
	}
	if leader < 0 {
		t.Fatal("no leader to pause")
	}
	if err := pc.Pause(leader); err != nil {
		t.Fatal(err)
	}
	// A request the client sent to the frozen member waits until it runs
	// again: the resume must not wait for the test's own requests.
	paused := time.Now()
	resumed := make(chan error, 1)
	time.AfterFunc(pauseFor, func() { resumed <- pc.Resume(leader) })
	next := -1
	for deadline := paused.Add(pauseFor); next < 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if l := pc.Leader(); l >= 0 && l != leader {
			next = l
		}
	}
	if err := <-resumed; err != nil {
		t.Fatal(err)
	}
	if next < 0 {
		t.Fatalf("member %d, the leader, was paused for %s and no other member led meanwhile", leader, pauseFor)
	}
	t.Logf("member %d, the leader, was paused for %s; member %d led meanwhile", leader, pauseFor, next)
	// The woken member rejoins, and a request sent meanwhile may time out
	// with its outcome unknown: the after generations are granted once the
	// cluster takes writes again. after-0 runs out from its grant; after-1
	// is renewed 2 s later, so it runs out only past the expiry after-0
	// would have had.
	waitWritable(t, c)
	a0, a1 := hold("after-0"), hold("after-1")
	watch(&watchedLease{name: a0.Name, fence: a0.Fence, told: a0.ExpiresAt, refreshed: a0.DecidedAt})
	time.Sleep(2 * time.Second)
	r, err := c.RenewLease(ctx(t), *a1, expiryTTL)
	if err != nil {
		t.Fatalf("renew %s: %v", a1.Name, err)
	}
	watch(&watchedLease{name: r.Name, fence: r.Fence, told: r.ExpiresAt, refreshed: r.DecidedAt})
	wg.Wait()
	changes := terms.stop()
	t.Logf("terms seen: %v", changes)
	for _, w := range watched {
		w.check(t, changes)
	}
}

const (
	// expiryTTL is the TTL of TestExpiryAcrossLeaderPause's leases: longer
	// than the 6 s slack of the linearizability runs across a leader change.
	expiryTTL = 8 * time.Second
	// pauseFor is how long the leader is frozen.
	pauseFor = 3 * time.Second
	// lateSlack is how long after its last possible expiry a lease may
	// still be seen held: the lessor's 500 ms checks, the raft write that
	// deletes the held key, the watcher's polls, on a loaded machine.
	lateSlack = 4 * time.Second
	// election is the test cluster's election timeout, by which a new
	// leader extends every lease.
	election = testetcd.ElectionMs * time.Millisecond
)

// watchedLease is one generation watched until it is taken over.
type watchedLease struct {
	name      string
	fence     int64
	told      time.Time // the expiry its holder was last told
	refreshed time.Time // when its TTL last (re)started: the decision of its grant or renewal

	// What the watcher saw.
	earlyFree []time.Time // reads that returned before told and found it free
	freeSeen  time.Time   // the first read that found it free returned
	taken     time.Time   // the takeover's decision time
	takenBy   int64       // the takeover's fence
	err       error
}

// watch reads the lease and tries to take it over, every 100 ms, until
// the takeover succeeds or the generation outlived any expiry by far.
func (w *watchedLease) watch(c *fenced.Client) {
	giveUp := w.told.Add(expiryTTL + election + lateSlack + 10*time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), giveUp.Add(time.Minute))
	defer cancel()
	for time.Now().Before(giveUp) {
		l, err := c.GetLease(ctx, w.name)
		ret := time.Now()
		if err != nil {
			w.err = fmt.Errorf("get %s: %w", w.name, err)
			return
		}
		if l.Fence != w.fence {
			w.err = fmt.Errorf("%s: fence %d, want %d, before any takeover", w.name, l.Fence, w.fence)
			return
		}
		if !l.Held {
			if ret.Before(w.told) {
				w.earlyFree = append(w.earlyFree, ret)
			}
			if w.freeSeen.IsZero() {
				w.freeSeen = ret
			}
			n, err := c.AcquireLease(ctx, w.name, "B", expiryTTL)
			var held *fenced.HeldError
			switch {
			case err == nil:
				w.taken, w.takenBy = n.DecidedAt, n.Fence
				return
			case !errors.As(err, &held):
				w.err = fmt.Errorf("take over %s: %w", w.name, err)
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// check judges what w's watcher saw against the leader changes seen.
func (w *watchedLease) check(t *testing.T, changes []termChange) {
	t.Helper()
	if w.err != nil {
		t.Error(w.err)
		return
	}
	if w.taken.IsZero() {
		t.Errorf("%s (fence %d, told it expires at %s) was never taken over", w.name, w.fence, w.told.Format(tsFormat))
		return
	}
	for _, at := range w.earlyFree {
		t.Errorf("%s (fence %d) was read free at %s, before %s, the expiry its holder was told", w.name, w.fence, at.Format(tsFormat), w.told.Format(tsFormat))
	}
	if w.taken.Before(w.told) {
		t.Errorf("%s (fence %d) was taken over at %s, before %s, the expiry its holder was told", w.name, w.fence, w.taken.Format(tsFormat), w.told.Format(tsFormat))
	}
	if w.takenBy != w.fence+1 {
		t.Errorf("%s: taken over with fence %d after fence %d", w.name, w.takenBy, w.fence)
	}
	// The latest the cluster may end it: its own expiry, or a TTL and an
	// election after the last leader change seen since its TTL restarted
	// and before it was seen free.
	latest := w.told
	for _, ch := range changes {
		if ch.seen.After(w.refreshed) && ch.seen.Before(w.freeSeen) {
			latest = later(latest, ch.seen.Add(expiryTTL+election))
		}
	}
	if end := later(w.freeSeen, w.taken); end.After(latest.Add(lateSlack)) {
		t.Errorf("%s (fence %d, told %s) was held until %s, %s past the latest its expiry and the leader changes explain (%s)",
			w.name, w.fence, w.told.Format(tsFormat), end.Format(tsFormat), end.Sub(latest).Round(time.Millisecond), latest.Format(tsFormat))
	}
	t.Logf("%s: told %s, seen free %s after it, taken over %s after it",
		w.name, w.told.Format(tsFormat), w.freeSeen.Sub(w.told).Round(time.Millisecond), w.taken.Sub(w.told).Round(time.Millisecond))
}

const tsFormat = "15:04:05.000"

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// termChange is a raft term the watcher saw first at seen.
type termChange struct {
	term   uint64
	leader int
	seen   time.Time
}

func (c termChange) String() string {
	return fmt.Sprintf("%d (member %d) at %s", c.term, c.leader, c.seen.Format(tsFormat))
}

// termWatcher polls the cluster's term every 50 ms.
type termWatcher struct {
	stopc   chan struct{}
	done    chan struct{}
	changes []termChange
}

// watchTerms starts watching pc's raft terms; the first term seen is not a
// change.
func watchTerms(t *testing.T, pc *testetcd.ProcCluster) *termWatcher {
	w := &termWatcher{stopc: make(chan struct{}), done: make(chan struct{})}
	first, _ := pc.Term()
	go func() {
		defer close(w.done)
		last := first
		for {
			select {
			case <-w.stopc:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if term, leader := pc.Term(); term > last {
				last = term
				w.changes = append(w.changes, termChange{term, leader, time.Now()})
			}
		}
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

// stop ends the watch and returns the changes seen.
func (w *termWatcher) stop() []termChange {
	select {
	case <-w.stopc:
	default:
		close(w.stopc)
	}
	<-w.done
	return w.changes
}

// waitWritable waits until the cluster grants and releases a probe lease,
// failing the test if it does not within 30 s.
func waitWritable(t *testing.T, c *fenced.Client) {
	t.Helper()
	var err error
	for i, deadline := 0, time.Now().Add(30*time.Second); time.Now().Before(deadline); i++ {
		var l *fenced.Lease
		if l, err = c.AcquireLease(ctx(t), fmt.Sprintf("probe-%d", i), "probe", expiryTTL); err == nil {
			if _, err = c.ReleaseLease(ctx(t), *l); err == nil {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the cluster took no write within 30 s of the resume: %v", err)
}
