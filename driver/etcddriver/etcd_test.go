package etcddriver_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/etcddriver"
)

// open opens a client on a fresh prefix and returns it with the prefix.
func open(t *testing.T) (*fenced.Client, string) {
	t.Helper()
	url := cluster.URL()
	d, err := etcddriver.Open(ctx(t), url)
	if err != nil {
		t.Fatal(err)
	}
	c := fenced.New(d, fenced.Config{})
	t.Cleanup(func() { c.Close(); d.Close() })
	u, _ := etcddriver.ParseURL(url)
	return c, u.Prefix
}

func TestTTLThatIsNotWholeSecondsIsRefused(t *testing.T) {
	c, _ := open(t)
	for _, ttl := range []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond, time.Second + time.Microsecond} {
		_, err := c.AcquireLease(ctx(t), "job", "A", ttl)
		var inv *fenced.InvalidError
		if !errors.As(err, &inv) || inv.Field != "ttl" || !strings.Contains(inv.Reason, "whole seconds") {
			t.Fatalf("acquire with ttl %s: want *InvalidError on ttl, got %v", ttl, err)
		}
	}
	if _, err := c.GetLease(ctx(t), "job"); !errors.Is(err, fenced.ErrNotFound) {
		t.Fatalf("a refused TTL wrote the lease: %v", err)
	}
	l, err := c.AcquireLease(ctx(t), "job", "A", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RenewLease(ctx(t), *l, 2500*time.Millisecond); !errors.Is(err, fenced.ErrInvalid) {
		t.Fatalf("renew with 2.5s: want invalid, got %v", err)
	}
}

// The cluster, not this process, ends a lease: its held key is deleted by
// the cluster once the etcd lease runs out, with no client call at all.
func TestClusterEndsTheLease(t *testing.T) {
	c, prefix := open(t)
	l, err := c.AcquireLease(ctx(t), "job", "A", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	raw := rawClient(t)
	resp, err := raw.Get(ctx(t), prefix+"held/job")
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease == 0 || string(resp.Kvs[0].Value) != "1/A" {
		t.Fatalf("held key right after acquire: %v %v", resp, err)
	}
	ttl, err := raw.TimeToLive(ctx(t), clientv3.LeaseID(resp.Kvs[0].Lease))
	if err != nil || ttl.GrantedTTL != 1 {
		t.Fatalf("etcd lease of the generation: %+v %v, want granted TTL 1", ttl, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err = raw.Get(ctx(t), prefix+"held/job")
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("held key still there 5s after a 1s TTL")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if gone := time.Now(); gone.Before(l.ExpiresAt) {
		t.Fatalf("the cluster ended the lease at %s, before its reported expiry %s", gone, l.ExpiresAt)
	}
	got, err := c.GetLease(ctx(t), "job")
	if err != nil || got.Held || got.Released || got.Fence != 1 {
		t.Fatalf("after the cluster ended it: %+v %v, want expired fence 1", got, err)
	}
	if _, err := c.RenewLease(ctx(t), *l, time.Second); !errors.Is(err, fenced.ErrStale) {
		t.Fatalf("renew after the cluster ended it: %v", err)
	}
}

// A same-owner re-acquire moves the generation to a new etcd lease and
// revokes the old one; a renew with the same TTL keeps the etcd lease.
func TestReacquireAndRenewManageEtcdLeases(t *testing.T) {
	c, prefix := open(t)
	raw := rawClient(t)
	leaseOf := func() clientv3.LeaseID {
		resp, err := raw.Get(ctx(t), prefix+"held/job")
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("held key: %v %v", resp, err)
		}
		return clientv3.LeaseID(resp.Kvs[0].Lease)
	}
	l, err := c.AcquireLease(ctx(t), "job", "A", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	first := leaseOf()
	if _, err := c.RenewLease(ctx(t), *l, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := leaseOf(); got != first {
		t.Fatalf("renew with the same TTL moved the etcd lease %x to %x", first, got)
	}
	again, err := c.AcquireLease(ctx(t), "job", "A", 7*time.Second)
	if err != nil || again.Fence != 1 {
		t.Fatalf("re-acquire: %+v %v", again, err)
	}
	second := leaseOf()
	if second == first {
		t.Fatal("re-acquire kept the old etcd lease")
	}
	if ttl, err := raw.TimeToLive(ctx(t), first); err != nil || ttl.TTL != -1 {
		t.Fatalf("old etcd lease after re-acquire: %+v %v, want revoked (TTL -1)", ttl, err)
	}
	if ttl, err := raw.TimeToLive(ctx(t), second); err != nil || ttl.GrantedTTL != 7 {
		t.Fatalf("new etcd lease: %+v %v, want granted 7", ttl, err)
	}
	if _, err := c.ReleaseLease(ctx(t), *again); err != nil {
		t.Fatal(err)
	}
	if ttl, err := raw.TimeToLive(ctx(t), second); err != nil || ttl.TTL != -1 {
		t.Fatalf("etcd lease after release: %+v %v, want revoked", ttl, err)
	}
}

func TestJobsAreNotSupported(t *testing.T) {
	c, _ := open(t)
	_, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k"})
	if !errors.Is(err, fenced.ErrJobsNotSupported) || !errors.Is(err, errors.ErrUnsupported) ||
		!strings.Contains(err.Error(), "not offered on etcd, which keeps leases, fences and resources only") {
		t.Fatalf("enqueue on etcd: %v", err)
	}
	if _, err := c.ListJobs(ctx(t), fenced.JobFilter{}); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("list jobs on etcd: %v", err)
	}
	if _, err := c.AcquireSlot(ctx(t), "pool", "A", 2, time.Second); !errors.Is(err, fenced.ErrSemaphoresNotSupported) ||
		!errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("semaphore acquire on etcd: %v", err)
	}
}

// A Worker and a Maintainer, which would fail every round on etcd (and
// may log nowhere), refuse to start.
func TestWorkerAndMaintainerRefuseToStart(t *testing.T) {
	c, _ := open(t)
	w, err := c.NewWorker(fenced.WorkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("k", func(context.Context, *fenced.JobRun) error { return nil })
	if err := w.Start(ctx(t)); !errors.Is(err, fenced.ErrJobsNotSupported) {
		w.Stop(ctx(t))
		t.Fatalf("worker start on etcd: %v", err)
	}
	if m, err := c.StartMaintenance(ctx(t), fenced.MaintenanceConfig{}); !errors.Is(err, fenced.ErrJobsNotSupported) {
		if m != nil {
			m.Stop()
		}
		t.Fatalf("maintenance start on etcd: %v", err)
	}
}

// The etcd driver declares the core and nothing of the job queue, the
// semaphores or a clock read, so the Client knows from New which it lacks.
func TestDriverDeclaresOnlyWhatItImplements(t *testing.T) {
	c, _ := open(t)
	d := c.Driver()
	if _, ok := d.(driver.JobDriver); ok {
		t.Error("the etcd driver implements driver.JobDriver")
	}
	if _, ok := d.(driver.SemaphoreDriver); ok {
		t.Error("the etcd driver implements driver.SemaphoreDriver")
	}
	if _, ok := d.(driver.Clock); ok {
		t.Error("the etcd driver implements driver.Clock")
	}
	for _, cap := range []fenced.Capability{fenced.CapJobs, fenced.CapSemaphores, fenced.CapClock} {
		if c.Supports(cap) {
			t.Errorf("a client on etcd supports %s", cap)
		}
	}
}

func TestParseURL(t *testing.T) {
	u, err := etcddriver.ParseURL("etcd://a:1,b:2/app/x/")
	if err != nil || strings.Join(u.Endpoints, " ") != "http://a:1 http://b:2" || u.Prefix != "/app/x/" {
		t.Fatalf("%+v %v", u, err)
	}
	if u, _ := etcddriver.ParseURL("etcd://a:1"); u.Prefix != "/fenced/" {
		t.Fatalf("default prefix %q", u.Prefix)
	}
	for _, bad := range []string{"etcd://a/p", "etcd://a:1,/p", "etcd://u@a:1", "etcd://a:1/p?x=1", "postgres://a:1"} {
		if _, err := etcddriver.ParseURL(bad); !errors.Is(err, fenced.ErrInvalid) {
			t.Errorf("%q: want invalid, got %v", bad, err)
		}
	}
}

// The largest value the API accepts fits one etcd request, with an
// operation id too.
func TestLargestValueIsStored(t *testing.T) {
	c, _ := open(t)
	v := make([]byte, fenced.MaxValueBytes)
	for i := range v {
		v[i] = byte(i)
	}
	if _, err := c.WriteResource(ctx(t), "big", v, 1, fenced.WriteOptions{OperationID: "op"}); err != nil {
		t.Fatal(err)
	}
	r, err := c.ReadResource(ctx(t), "big")
	if err != nil || string(r.Value) != string(v) || r.Version != 1 || r.Fence != 1 {
		t.Fatalf("read back: %d bytes, version %d, fence %d, %v", len(r.Value), r.Version, r.Fence, err)
	}
}
