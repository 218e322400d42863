package etcddriver_test

import (
	"testing"
	"time"

	"github.com/fenced/fenced/driver/drivertest"
	"github.com/fenced/fenced/internal/test/testetcd"
)

// The linearizability check while the leader is frozen (SIGSTOP) for 3 s
// during the recorded workload, each member a process of its own. The
// other two elect a new leader while the old one still believes it leads;
// when it runs again it learns of the newer term and follows, and requests
// sent to it meanwhile are served late or fail (a renewal it can no longer
// grant is refused and made again elsewhere). The pause itself lengthens no
// lease: the frozen leader expires nothing, and the new one, once elected,
// gives every lease its full TTL (up to 2 s in this workload) plus the 0.5 s
// election timeout, as after a restart (restart_test.go). A lease whose
// expiry fell just before the pause and was not yet revoked (the lessor
// looks every 500 ms) is extended too, and the election takes 0.5–1 s from
// the pause, longer on a loaded machine: a lease can outlive its reported
// expiry by about 4 s. The slack is the restart test's 6 s, 2 s of it margin
// for the shared two cores; fences, owners, release and the resource are
// checked exactly. A slack that wide passes any expiry of these 1–2 s
// leases: TestExpiryAcrossLeaderPause checks expiry across the pause.
func TestLinearizabilityWhileLeaderPaused(t *testing.T) {
	pc, err := testetcd.StartProcesses(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pc.Close)
	b := backend()
	b.NewURL = func(testing.TB) string { return pc.URL() }
	b.ExpirySlack = 6 * time.Second
	const pauseFor = 3 * time.Second
	type takeover struct{ paused, next int }
	result := make(chan takeover, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(time.Second)
		i := -1
		for deadline := time.Now().Add(5 * time.Second); i < 0 && time.Now().Before(deadline); i = pc.Leader() {
			time.Sleep(50 * time.Millisecond)
		}
		if i < 0 {
			t.Error("no leader to pause")
			return
		}
		if err := pc.Pause(i); err != nil {
			t.Error(err)
			return
		}
		end := time.Now().Add(pauseFor)
		next := -1
		for ; time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if l := pc.Leader(); l >= 0 && l != i {
				next = l
				break
			}
		}
		time.Sleep(time.Until(end))
		if err := pc.Resume(i); err != nil {
			t.Error(err)
		}
		result <- takeover{i, next}
	}()
	t.Cleanup(func() { <-done })
	drivertest.RunLinearizability(t, b)
	<-done
	select {
	case r := <-result:
		if r.next < 0 {
			t.Errorf("member %d, the leader, was paused for %s and no other member led meanwhile", r.paused, pauseFor)
		} else {
			t.Logf("member %d, the leader, was paused for %s while the history was recorded; member %d led meanwhile", r.paused, pauseFor, r.next)
		}
	default:
		t.Error("no member was paused")
	}
}
