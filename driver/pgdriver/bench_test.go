package pgdriver_test

import (
	"context"
	"net/url"
	"strconv"
	"testing"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/drivertest"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BenchmarkFenced measures the lease operations on PostgreSQL; bench/run.sh
// sets them beside pgbench running the same statements.
func BenchmarkFenced(b *testing.B) {
	drivertest.Bench(b, drivertest.BenchBackend{Backend: Backend, Open: openPool})
}

// openPool opens a client whose pgx pool holds exactly conns connections
// (pool_max_conns), connecting them all before it returns.
func openPool(tb testing.TB, rawURL string, conns int) *fenced.Client {
	tb.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		tb.Fatalf("parse url: %v", err)
	}
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(conns))
	u.RawQuery = q.Encode()
	ctx := context.Background()
	c, err := fenced.Open(ctx, u.String(), fenced.Config{})
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	pool := c.Driver().(*pgdriver.Driver).Pool()
	held := make([]*pgxpool.Conn, conns)
	for i := range held {
		if held[i], err = pool.Acquire(ctx); err != nil {
			tb.Fatalf("connect: %v", err)
		}
	}
	for _, conn := range held {
		conn.Release()
	}
	return c
}
