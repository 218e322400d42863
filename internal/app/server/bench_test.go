package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/testdb"
)

// The benchmarks compare the same operations through the library and
// over HTTP on loopback with keep-alive, on both backends, each from
// benchClients concurrent clients (b.RunParallel goroutines):
//
//	go test ./internal/app/server -run XXX -bench . -benchtime 3s
//
// Renew renews one lease per client; ClaimComplete claims one job and
// completes it (the queue is filled beforehand, outside the timing).

// benchClients is how many clients run at once on each side: as many as
// the lease benchmarks' concurrent case, so that a server has requests to
// overlap (a client waits for each answer before it sends its next).
var benchClients = envInt("FENCED_BENCH_CLIENTS", 16)

// parallel runs body on benchClients goroutines.
func parallel(b *testing.B, body func(*testing.PB)) {
	b.SetParallelism((benchClients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.RunParallel(body)
}

// renewTTL alternates a renewal's TTL between 60 and 61 seconds, so that
// every renewal writes a new expiry. With one TTL, renewals of a lease within
// the same millisecond (the SQLite clock's resolution) would store the bytes
// already stored, which SQLite and InnoDB skip, so that nothing is written
// or synced: a fast client would be measured renewing for free.
func renewTTL(i int) time.Duration { return time.Minute + time.Duration(i%2)*time.Second }

func BenchmarkRenew(b *testing.B) {
	eachBackend(b, func(b *testing.B, c *fenced.Client, ts *httptest.Server) {
		var n atomic.Int64
		b.Run("Library", func(b *testing.B) {
			parallel(b, func(pb *testing.PB) {
				l, err := c.AcquireLease(context.Background(), fmt.Sprint("lib-", n.Add(1)), "o", time.Minute)
				if err != nil {
					b.Error(err)
					return
				}
				for i := 0; pb.Next(); i++ {
					if _, err := c.RenewLease(context.Background(), *l, renewTTL(i)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		b.Run("HTTP", func(b *testing.B) {
			parallel(b, func(pb *testing.PB) {
				name := fmt.Sprint("http-", n.Add(1))
				var l struct{ Fence int64 }
				if !post(b, ts, "/v1/leases/"+name+"/acquire", `{"owner": "o", "ttl_ms": 60000}`, &l) {
					return
				}
				for i := 0; pb.Next(); i++ {
					body := fmt.Sprintf(`{"owner": "o", "fence": %d, "ttl_ms": %d}`, l.Fence, renewTTL(i).Milliseconds())
					if !post(b, ts, "/v1/leases/"+name+"/renew", body, nil) {
						return
					}
				}
			})
		})
	})
}

func BenchmarkClaimComplete(b *testing.B) {
	fill := func(b *testing.B, c *fenced.Client, queue string, n int) {
		ps := make([]fenced.EnqueueParams, n)
		for i := range ps {
			ps[i] = fenced.EnqueueParams{Kind: "k", Queue: queue}
		}
		for len(ps) > 0 {
			k := min(len(ps), 1000)
			if _, err := c.EnqueueMany(context.Background(), nil, ps[:k]); err != nil {
				b.Fatal(err)
			}
			ps = ps[k:]
		}
	}
	// Each run gets a database of its own: claims slow down as a queue's
	// table fills with finished jobs and dead rows, and the side measured
	// second must not pay for the first.
	eachFresh(b, func(b *testing.B, fresh func(*testing.B) (*fenced.Client, *httptest.Server)) {
		b.Run("Library", func(b *testing.B) {
			c, _ := fresh(b)
			fill(b, c, "q", b.N+1000)
			b.ResetTimer()
			parallel(b, func(pb *testing.PB) {
				for pb.Next() {
					jobs, err := c.ClaimJobs(context.Background(), "q", "w", 1, time.Minute)
					if err != nil || len(jobs) != 1 {
						b.Errorf("claim: %v, %d jobs", err, len(jobs))
						return
					}
					if err := c.CompleteJob(context.Background(), jobs[0].Ref(), nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		b.Run("HTTP", func(b *testing.B) {
			c, ts := fresh(b)
			fill(b, c, "q", b.N+1000)
			b.ResetTimer()
			parallel(b, func(pb *testing.PB) {
				for pb.Next() {
					var claim struct {
						Jobs []struct{ ID, Fence int64 }
					}
					if !post(b, ts, "/v1/queues/q/claim", `{"owner": "w", "lease_ms": 60000}`, &claim) {
						return
					}
					if len(claim.Jobs) != 1 {
						b.Error("claimed nothing")
						return
					}
					j := claim.Jobs[0]
					if !post(b, ts, fmt.Sprintf("/v1/jobs/%d/complete", j.ID), fmt.Sprintf(`{"fence": %d}`, j.Fence), nil) {
						return
					}
				}
			})
		})
	})
}

// benchDB is a database of each backend for the benchmarks.
var benchDBs = []struct {
	name string
	url  func(testing.TB) string
}{{"SQLite", testdb.SQLite}, {"PostgreSQL", testdb.Postgres}}

// eachBackend runs bench on a server over SQLite and one over PostgreSQL.
func eachBackend(b *testing.B, bench func(*testing.B, *fenced.Client, *httptest.Server)) {
	for _, db := range benchDBs {
		b.Run(db.name, func(b *testing.B) {
			c, ts := serve(b, db.url(b))
			bench(b, c, ts)
		})
	}
}

// eachFresh runs bench per backend with fresh, which opens a new database
// of that backend, a client and a server on it, closed when the (sub-)
// benchmark calling it ends.
func eachFresh(b *testing.B, bench func(*testing.B, func(*testing.B) (*fenced.Client, *httptest.Server))) {
	for _, db := range benchDBs {
		b.Run(db.name, func(b *testing.B) {
			bench(b, func(b *testing.B) (*fenced.Client, *httptest.Server) { return serve(b, db.url(b)) })
		})
	}
}

// serve opens and migrates url and serves it on a test server, both
// closed at the end of b.
func serve(b *testing.B, url string) (*fenced.Client, *httptest.Server) {
	ctx := context.Background()
	c, err := fenced.Open(ctx, url, fenced.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if _, err := c.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	srv, err := New(c, Config{})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	b.Cleanup(func() { srv.Close(); ts.Close() })
	ts.Client().Transport.(*http.Transport).MaxIdleConnsPerHost = 256
	return c, ts
}

// post sends a JSON body and decodes a 200 answer into out (if not nil);
// it reports a failure with b.Error (it runs on RunParallel's goroutines)
// and returns false.
func post(b *testing.B, ts *httptest.Server, path, body string, out any) bool {
	res, err := ts.Client().Post(ts.URL+path, "application/json", bytes.NewReader([]byte(body)))
	if err != nil {
		b.Error(err)
		return false
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		b.Errorf("%s: %d %s", path, res.StatusCode, raw)
		return false
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			b.Error(err)
			return false
		}
	}
	return true
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
