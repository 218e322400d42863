package drivertest

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// BenchBackend is a Backend plus what the benchmarks need: a client whose
// pool holds an exact number of connections.
type BenchBackend struct {
	Backend
	// Open returns a client on url whose pool holds at most conns
	// connections, all of them already connected, closed when tb ends.
	Open func(tb testing.TB, url string, conns int) *fenced.Client
}

// BenchConns are the connection counts every operation is measured at.
var BenchConns = []int{1, 16}

// Benchmark inputs, shared with the pgbench scripts in bench/pgbench so the
// two sides run the same statements with the same values.
const (
	BenchOwner = "bench"
	BenchTTL   = time.Hour
	// BenchValue is the resource value written (32 bytes).
	BenchValue = "0123456789abcdef0123456789abcdef"
	// BenchBizDDL is the small business table a guarded transaction writes.
	BenchBizDDL = `CREATE TABLE fenced_bench_biz (k VARCHAR(100) PRIMARY KEY, v BIGINT NOT NULL)`
	// BenchBizSQL is the business update inside the guarded transaction
	// (PostgreSQL placeholders; bound per backend).
	BenchBizSQL = `UPDATE fenced_bench_biz SET v = v + 1 WHERE k = $1`
)

// BenchOps are the operations Bench measures, in order.
var BenchOps = []string{"AcquireRelease", "Renew", "LeaseTx", "ResourceWrite"}

// BenchName is worker w's own lease name or resource key for op: the same
// numeric names the pgbench scripts derive from :client_id (base + w).
func BenchName(op string, w int) string {
	return strconv.Itoa(benchBase[op] + w)
}

var benchBase = map[string]int{"AcquireRelease": 1000, "Renew": 2000, "LeaseTx": 3000, "ResourceWrite": 4000}

// benchOp is one measured operation. prepare readies worker w's own row and
// returns one operation on it.
type benchOp struct {
	name    string
	prepare func(b *testing.B, e *benchEnv, w int) func(context.Context) error
}

var benchOps = []benchOp{
	{"AcquireRelease", func(b *testing.B, e *benchEnv, w int) func(context.Context) error {
		name := BenchName("AcquireRelease", w)
		return func(ctx context.Context) error {
			l, err := e.c.AcquireLease(ctx, name, BenchOwner, BenchTTL)
			if err != nil {
				return err
			}
			_, err = e.c.ReleaseLease(ctx, *l)
			return err
		}
	}},
	{"Renew", func(b *testing.B, e *benchEnv, w int) func(context.Context) error {
		l := e.acquire(b, BenchName("Renew", w))
		return func(ctx context.Context) error {
			_, err := e.c.RenewLease(ctx, *l, BenchTTL)
			return err
		}
	}},
	{"LeaseTx", func(b *testing.B, e *benchEnv, w int) func(context.Context) error {
		l := e.acquire(b, BenchName("LeaseTx", w))
		e.b.Exec(b, e.url, fmt.Sprintf(`INSERT INTO fenced_bench_biz (k, v) VALUES ('%s', 0)`, l.Name))
		update := e.b.bind(BenchBizSQL)
		return func(ctx context.Context) error {
			return e.c.LeaseTx(ctx, *l, func(tx fenced.Tx) error {
				n, err := tx.Exec(ctx, update, l.Name)
				if err == nil && n != 1 {
					err = fmt.Errorf("business update matched %d rows", n)
				}
				return err
			})
		}
	}},
	{"ResourceWrite", func(b *testing.B, e *benchEnv, w int) func(context.Context) error {
		l := e.acquire(b, BenchName("ResourceWrite", w))
		value := []byte(BenchValue)
		return func(ctx context.Context) error {
			_, err := e.c.WriteResource(ctx, l.Name, value, l.Fence, fenced.WriteOptions{})
			return err
		}
	}},
}

// Bench measures each operation on one connection (a sequential loop) and on
// 16 connections driven by 16 goroutines, reporting ops/s.
//
// Each goroutine works on its own lease name (and resource key, and business
// row), as each pgbench client updates its own row: the figure is the
// throughput of independent holders, not of contention on one row, which the
// database serializes whatever the client does.
//
// Every run gets a fresh migrated database; setup is not timed.
func Bench(b *testing.B, bb BenchBackend) {
	for _, op := range benchOps {
		for _, conns := range BenchConns {
			b.Run(fmt.Sprintf("%s/conns=%d", op.name, conns), func(b *testing.B) {
				if conns == 1 {
					benchSerial(b, bb, op)
				} else {
					benchParallel(b, bb, op, conns)
				}
			})
		}
	}
}

// benchEnv is one benchmark run's database and client.
type benchEnv struct {
	b   Backend
	url string
	c   *fenced.Client
}

func newBenchEnv(b *testing.B, bb BenchBackend, conns int) *benchEnv {
	b.Helper()
	url := bb.NewURL(b)
	c := bb.Open(b, url, conns)
	if _, err := c.Migrate(context.Background()); err != nil {
		b.Fatalf("migrate: %v", err)
	}
	bb.Exec(b, url, BenchBizDDL)
	return &benchEnv{b: bb.Backend, url: url, c: c}
}

func (e *benchEnv) acquire(b *testing.B, name string) *fenced.Lease {
	b.Helper()
	l, err := e.c.AcquireLease(context.Background(), name, BenchOwner, BenchTTL)
	if err != nil {
		b.Fatalf("acquire %s: %v", name, err)
	}
	return l
}

func benchSerial(b *testing.B, bb BenchBackend, op benchOp) {
	e := newBenchEnv(b, bb, 1)
	BenchLoop(b, 1, func(w int) func(context.Context) error { return op.prepare(b, e, w) })
}

func benchParallel(b *testing.B, bb BenchBackend, op benchOp, conns int) {
	e := newBenchEnv(b, bb, conns)
	BenchLoop(b, conns, func(w int) func(context.Context) error { return op.prepare(b, e, w) })
}

// BenchLoop drives one operation as Bench does and reports ops/s: at one
// connection a sequential b.Loop, else conns goroutines (rounded up to a
// multiple of GOMAXPROCS, as RunParallel requires) under RunParallel, each
// on its own worker. prepare(w) readies worker w's own row, untimed, and
// returns one operation on it. The pool behind it should hold exactly conns
// connections. It is exported so that a benchmark of the same statements
// without fenced (pgdriver's BenchmarkPgxAlone) is driven identically.
func BenchLoop(b *testing.B, conns int, prepare func(w int) func(context.Context) error) {
	ctx := context.Background()
	if conns == 1 {
		do := prepare(0)
		for b.Loop() {
			if err := do(ctx); err != nil {
				b.Fatal(err)
			}
		}
		reportOpsPerSec(b)
		return
	}
	procs := runtime.GOMAXPROCS(0)
	perProc := (conns + procs - 1) / procs
	workers := make([]func(context.Context) error, perProc*procs)
	for w := range workers {
		workers[w] = prepare(w)
	}
	var next atomic.Int64
	b.SetParallelism(perProc)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		do := workers[next.Add(1)-1]
		for pb.Next() {
			if err := do(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	reportOpsPerSec(b)
	b.ReportMetric(float64(len(workers)), "goroutines")
}

func reportOpsPerSec(b *testing.B) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "ops/s")
	}
}
