package testetcd_test

import (
	"os"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/testetcd"
)

func TestMain(m *testing.M) {
	testetcd.MaybeRunMember()
	os.Exit(m.Run())
}

// A paused leader is replaced while it is frozen, and the cluster of
// processes ends with Close.
func TestProcessesPauseLeader(t *testing.T) {
	c, err := testetcd.StartProcesses(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n := len(c.Endpoints()); n != 3 {
		t.Fatalf("%d endpoints, want 3", n)
	}
	old := waitLeader(t, c, -1)
	if err := c.Pause(old); err != nil {
		t.Fatal(err)
	}
	next := waitLeader(t, c, old)
	if err := c.Resume(old); err != nil {
		t.Fatal(err)
	}
	t.Logf("member %d led, was paused, member %d took over", old, next)
}

// waitLeader polls until a member other than not leads.
func waitLeader(t *testing.T, c *testetcd.ProcCluster, not int) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if i := c.Leader(); i >= 0 && i != not {
			return i
		}
	}
	t.Fatalf("no leader but %d after 10s", not)
	return -1
}
