package etcddriver_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fenced/fenced/driver/drivertest"
	"github.com/fenced/fenced/driver/etcddriver"
	"github.com/fenced/fenced/internal/test/testetcd"
)

// The linearizability check while the leader is killed with SIGKILL
// mid-history and started again from its data directory 1.5 s later, each
// member a process of its own. A crash, unlike a graceful stop, flushes and
// closes nothing: whatever the killed leader had proposed and not yet
// answered is an unknown outcome for its caller, and the member comes back
// from the write-ahead log the kill left. The history must be linearizable
// with the fences, owners, release, the resource versions and values
// checked exactly: a fence granted again or going down, or an acknowledged
// resource write missing from what later reads and writes see, is illegal
// (the checker's own mutations show it would say so). Expiry's slack is
// the restart test's, for the same reason: the new leader restarts every
// lease's TTL. Then the member must have come back as itself (its member
// id) and caught up: read alone, without asking the leader, it holds every
// key of the history exactly as the cluster does.
func TestLinearizabilityAcrossLeaderKill(t *testing.T) {
	linearizabilityAcrossKill(t, 6*time.Second, func(pc *testetcd.ProcCluster) ([]int, error) {
		i := -1
		for deadline := time.Now().Add(5 * time.Second); i < 0 && time.Now().Before(deadline); i = pc.Leader() {
			time.Sleep(50 * time.Millisecond)
		}
		if i < 0 {
			return nil, errors.New("no leader to kill")
		}
		return []int{i}, pc.Kill(i)
	})
}

// The same with every member killed at once: the whole cluster crashes
// mid-history, and all three start again 1.5 s later from their data
// directories. Nothing that was acknowledged survives anywhere but in what
// the killed members had written to disk, so a lost grant or resource write
// would show in the history. (The test members do not fsync: a process
// crash keeps what they wrote in the page cache; a machine crash is another
// matter, which etcd's fsync covers in production.) While the cluster is
// down every call fails or waits: reads and grants are made again, deciding
// writes in flight are unknown outcomes. The slack is wider than the leader
// kill's by the outage: every lease's TTL restarts once the cluster has a
// leader again.
func TestLinearizabilityAcrossClusterKill(t *testing.T) {
	linearizabilityAcrossKill(t, 8*time.Second, func(pc *testetcd.ProcCluster) ([]int, error) {
		all := []int{0, 1, 2}
		for _, i := range all {
			if err := pc.Kill(i); err != nil {
				return nil, err
			}
		}
		return all, nil
	})
}

// linearizabilityAcrossKill runs the recorded workload on a cluster of
// three member processes; a second in, kill SIGKILLs some of them, which
// start again from their data directories 1.5 s later. The history must be
// linearizable with the given expiry slack, and each restarted member must
// have come back as itself and hold every key as the cluster does.
func linearizabilityAcrossKill(t *testing.T, slack time.Duration, kill func(*testetcd.ProcCluster) ([]int, error)) {
	pc, err := testetcd.StartProcesses(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pc.Close)
	ids := map[int]uint64{}
	for i := range 3 {
		if ids[i] = pc.MemberID(i); ids[i] == 0 {
			t.Fatalf("member %d reports no member id", i)
		}
	}
	url := pc.URL()
	b := backend()
	b.NewURL = func(testing.TB) string { return url }
	b.ExpirySlack = slack
	type outcome struct {
		killed []int
		err    error // of the kill or the restart
	}
	result := make(chan outcome, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(time.Second)
		killed, err := kill(pc)
		if err == nil {
			time.Sleep(1500 * time.Millisecond)
			err = pc.Restart(killed...)
		}
		result <- outcome{killed, err}
	}()
	t.Cleanup(func() { <-done })
	drivertest.RunLinearizability(t, b)
	<-done
	var o outcome
	select {
	case o = <-result:
	default:
		t.Fatal("no member was killed")
	}
	if o.err != nil {
		t.Fatalf("kill members %v and restart them from their data: %v", o.killed, o.err)
	}
	t.Logf("members %v were killed with SIGKILL while the history was recorded and restarted 1.5 s later", o.killed)
	for _, i := range o.killed {
		if id := pc.MemberID(i); id != ids[i] {
			t.Errorf("member %d came back with member id %x, was %x", i, id, ids[i])
		}
		wantCaughtUp(t, pc.Endpoints(), i, url)
	}
}

// wantCaughtUp fails t unless member i, read alone and without the leader
// (a serializable read), holds every key under url's prefix exactly as a
// linearizable read of the cluster found them, at the same revision.
func wantCaughtUp(t *testing.T, endpoints []string, i int, url string) {
	t.Helper()
	u, err := etcddriver.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	connect := func(eps ...string) *clientv3.Client {
		cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.Close() })
		return cli
	}
	all, alone := connect(endpoints...), connect(endpoints[i])
	want, err := all.Get(ctx(t), u.Prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Kvs) == 0 {
		t.Fatalf("no key under %s: the history wrote nothing", u.Prefix)
	}
	var got *clientv3.GetResponse
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		got, err = alone.Get(c, u.Prefix, clientv3.WithPrefix(), clientv3.WithSerializable(), clientv3.WithRev(want.Header.Revision))
		cancel()
		if err == nil {
			break
		}
		if !errors.Is(err, rpctypes.ErrFutureRev) && !errors.Is(err, context.DeadlineExceeded) || time.Now().After(deadline) {
			t.Fatalf("member %d alone at revision %d: %v", i, want.Header.Revision, err)
		}
	}
	if len(got.Kvs) != len(want.Kvs) {
		t.Fatalf("member %d alone holds %d keys under the prefix at revision %d, the cluster %d", i, len(got.Kvs), want.Header.Revision, len(want.Kvs))
	}
	for j, w := range want.Kvs {
		g := got.Kvs[j]
		if !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) || g.ModRevision != w.ModRevision || g.Version != w.Version {
			t.Errorf("member %d alone holds %s = %q (mod revision %d, version %d); the cluster %s = %q (%d, %d)",
				i, g.Key, g.Value, g.ModRevision, g.Version, w.Key, w.Value, w.ModRevision, w.Version)
		}
	}
	t.Logf("member %d alone holds the %d keys of the history as the cluster does, at revision %d", i, len(want.Kvs), want.Header.Revision)
}
