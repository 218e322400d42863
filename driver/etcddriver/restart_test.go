package etcddriver_test

import (
	"testing"
	"time"

	"github.com/fenced/fenced/driver/drivertest"
)

// The linearizability check while the leader is stopped and started again
// during the recorded workload. A new leader extends every lease (by the
// remaining TTL, up to the full TTL, plus the election timeout), so around
// the failover a lease outlives its reported expiry by up to a TTL and an
// election: the model's expiry slack is widened to match. Fences, owners,
// release and the resource are checked exactly, as without the restart.
func TestLinearizabilityAcrossLeaderRestart(t *testing.T) {
	b := backend()
	b.ExpirySlack = 6 * time.Second
	stopped := make(chan int, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(time.Second)
		i := -1
		for deadline := time.Now().Add(5 * time.Second); i < 0 && time.Now().Before(deadline); i = cluster.Leader() {
			time.Sleep(50 * time.Millisecond)
		}
		if i < 0 {
			t.Error("no leader to stop")
			return
		}
		cluster.Stop(i)
		stopped <- i
		time.Sleep(1500 * time.Millisecond)
		if err := cluster.Restart(i); err != nil {
			t.Errorf("restart member %d: %v", i, err)
		}
	}()
	t.Cleanup(func() { <-done })
	drivertest.RunLinearizability(t, b)
	<-done
	select {
	case i := <-stopped:
		t.Logf("member %d, the leader, was stopped for 1.5 s while the history was recorded", i)
	default:
		t.Error("no member was stopped")
	}
}
