package testetcd_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fenced/fenced/internal/test/testetcd"
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

// A member killed with SIGKILL starts again from its data directory, as
// itself, and holds what was written while it was down; the whole cluster
// killed at once starts again from its members' data and holds it too.
func TestProcessesKillAndRestart(t *testing.T) {
	c, err := testetcd.StartProcesses(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := c.MemberID(0)
	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}
	if c.MemberID(0) != 0 {
		t.Error("a killed member reports a member id")
	}
	cli := rawClient(t, c.Endpoints()[1:]...)
	put(t, cli, "while-down", "1")
	if err := c.Restart(0); err != nil {
		t.Fatal(err)
	}
	if got := c.MemberID(0); got != id {
		t.Errorf("member 0 came back as %x, was %x", got, id)
	}
	wantSerializable(t, rawClient(t, c.Endpoints()[0]), "while-down", "1")
	for i := range 3 {
		if err := c.Kill(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Restart(0, 1, 2); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		wantSerializable(t, rawClient(t, c.Endpoints()[i]), "while-down", "1")
	}
	if term, leader := c.Term(); term == 0 || leader < 0 {
		t.Errorf("after the restart: term %d, leader %d", term, leader)
	}
}

func rawClient(t *testing.T, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// put writes k = v, again while the cluster cannot take it (a member
// killed as it led: a put may time out before another leads), for up to
// 30 s; a put is safe to repeat.
func put(t *testing.T, cli *clientv3.Client, k, v string) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = cli.Put(ctx, k, v)
		cancel()
		if err == nil {
			return
		}
	}
	t.Fatal(err)
}

// wantSerializable waits until the one member cli talks to holds k = v,
// read locally (serializable), for up to 30 s.
func wantSerializable(t *testing.T, cli *clientv3.Client, k, v string) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := cli.Get(ctx, k, clientv3.WithSerializable())
		cancel()
		if err == nil && len(resp.Kvs) == 1 && string(resp.Kvs[0].Value) == v {
			return
		}
		last = fmt.Sprint(resp, err)
	}
	t.Fatalf("%s: want %q, last read %s", k, v, last)
}
