package etcddriver_test

import (
	"encoding/json"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fenced/fenced/driver/drivertest"
	"github.com/fenced/fenced/driver/etcddriver"
)

// backend is etcd as the conformance suite sees it.
func backend() drivertest.Backend {
	return drivertest.Backend{
		Name:       "etcd",
		OpenDriver: etcddriver.Open,
		NewURL:     func(testing.TB) string { return cluster.URL() },
		Snapshot:   snapshot,
		NoSQL:      "etcd runs no SQL: a fenced transaction buffers etcd puts",
		// etcd leases last whole seconds; the test cluster's minimum is 1 s.
		MinTTL: time.Second,
		// The lessor looks for expired leases every 500 ms and deletes their
		// keys by a raft write; the embedded members share two cores.
		ExpirySlack: 1500 * time.Millisecond,
	}
}

// TestConformance runs the conformance suite on a real three-member
// cluster: the groups of the job queue, the semaphores and the clock read
// skip, the driver implementing none of them, and so do those that need
// SQL in a fenced transaction.
func TestConformance(t *testing.T) { drivertest.Run(t, backend()) }

// snapshot copies every key under url's prefix; restore deletes the prefix
// and puts the copy back, held keys on fresh etcd leases of their
// generation's TTL, as a restored cluster brings back its leases.
func snapshot(t testing.TB, url string) func() {
	t.Helper()
	u, err := etcddriver.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	cli := rawClient(t)
	resp, err := cli.Get(ctx(t), u.Prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	kvs := resp.Kvs
	return func() {
		if _, err := cli.Delete(ctx(t), u.Prefix, clientv3.WithPrefix()); err != nil {
			t.Fatal(err)
		}
		ttl := map[string]int64{}
		for _, kv := range kvs {
			var rec struct {
				TTL int64 `json:"ttl_s"`
			}
			if json.Unmarshal(kv.Value, &rec) == nil && rec.TTL > 0 {
				ttl[string(kv.Key)] = rec.TTL
			}
		}
		for _, kv := range kvs {
			var opts []clientv3.OpOption
			if kv.Lease != 0 {
				name := string(kv.Key[len(u.Prefix+"held/"):])
				g, err := cli.Grant(ctx(t), ttl[u.Prefix+"lease/"+name])
				if err != nil {
					t.Fatal(err)
				}
				opts = append(opts, clientv3.WithLease(g.ID))
			}
			if _, err := cli.Put(ctx(t), string(kv.Key), string(kv.Value), opts...); err != nil {
				t.Fatal(err)
			}
		}
	}
}
