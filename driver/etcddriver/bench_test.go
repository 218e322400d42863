package etcddriver_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/etcddriver"
)

// BenchmarkEtcd measures fenced's lease and resource operations on the
// three-member cluster at 1 and 16 goroutines, each on its own lease name
// or resource key, beside a plain etcd client doing the same shape of
// work: Plain/AcquireRelease grants an etcd lease, puts a key on it iff
// absent (one Txn) and revokes the lease; Plain/Renew is one
// KeepAliveOnce; Plain/ResourceWrite is one Txn putting a value iff its
// fence prefix is not above the writer's. The difference is what fenced
// adds: the record, the reads its fence is computed from, the diagnosis.
//
//	go test -p 1 -run '^$' -bench Etcd -benchtime 2s ./driver/etcddriver/
func BenchmarkEtcd(b *testing.B) {
	for _, workers := range []int{1, 16} {
		for _, op := range []string{"AcquireRelease", "Renew", "ResourceWrite"} {
			b.Run(fmt.Sprintf("Fenced/%s/clients=%d", op, workers), func(b *testing.B) {
				d, err := etcddriver.Open(context.Background(), cluster.URL())
				if err != nil {
					b.Fatal(err)
				}
				c := fenced.New(d, fenced.Config{})
				b.Cleanup(func() { c.Close(); d.Close() })
				benchWorkers(b, workers, func(w int) func(context.Context) error { return fencedOp(b, c, op, w) })
			})
			b.Run(fmt.Sprintf("Plain/%s/clients=%d", op, workers), func(b *testing.B) {
				cli := rawClient(b)
				u, _ := etcddriver.ParseURL(cluster.URL())
				benchWorkers(b, workers, func(w int) func(context.Context) error { return plainOp(b, cli, u.Prefix, op, w) })
			})
		}
	}
}

func fencedOp(b *testing.B, c *fenced.Client, op string, w int) func(context.Context) error {
	name := strconv.Itoa(w)
	switch op {
	case "AcquireRelease":
		return func(ctx context.Context) error {
			l, err := c.AcquireLease(ctx, name, "bench", time.Hour)
			if err != nil {
				return err
			}
			_, err = c.ReleaseLease(ctx, *l)
			return err
		}
	case "Renew":
		l, err := c.AcquireLease(context.Background(), name, "bench", time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		return func(ctx context.Context) error { _, err := c.RenewLease(ctx, *l, time.Hour); return err }
	default:
		var fence int64
		return func(ctx context.Context) error {
			fence++
			_, err := c.WriteResource(ctx, name, []byte("0123456789abcdef0123456789abcdef"), fence, fenced.WriteOptions{})
			return err
		}
	}
}

func plainOp(b *testing.B, cli *clientv3.Client, prefix, op string, w int) func(context.Context) error {
	key := prefix + "plain/" + strconv.Itoa(w)
	switch op {
	case "AcquireRelease":
		return func(ctx context.Context) error {
			g, err := cli.Grant(ctx, 3600)
			if err != nil {
				return err
			}
			if _, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
				Then(clientv3.OpPut(key, "bench", clientv3.WithLease(g.ID))).Commit(); err != nil {
				return err
			}
			_, err = cli.Revoke(ctx, g.ID)
			return err
		}
	case "Renew":
		g, err := cli.Grant(context.Background(), 3600)
		if err != nil {
			b.Fatal(err)
		}
		return func(ctx context.Context) error { _, err := cli.KeepAliveOnce(ctx, g.ID); return err }
	default:
		var fence uint64
		return func(ctx context.Context) error {
			fence++
			v := fmt.Sprintf("%020d%s", fence, "0123456789abcdef0123456789abcdef")
			_, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.Value(key), "<", fmt.Sprintf("%020d", fence+1))).
				Then(clientv3.OpPut(key, v)).Else(clientv3.OpGet(key)).Commit()
			return err
		}
	}
}

// benchWorkers runs b.N operations over n goroutines, each with its own
// operation, and reports the throughput.
func benchWorkers(b *testing.B, n int, prepare func(w int) func(context.Context) error) {
	ops := make([]func(context.Context) error, n)
	for w := range ops {
		ops[w] = prepare(w)
	}
	ctx := context.Background()
	b.ResetTimer()
	var wg sync.WaitGroup
	for w, do := range ops {
		count := b.N / n
		if w < b.N%n {
			count++
		}
		wg.Go(func() {
			for range count {
				if err := do(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "ops/s")
	}
}
