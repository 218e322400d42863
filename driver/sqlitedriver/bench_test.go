package sqlitedriver_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/drivertest"
	"github.com/fenced/fenced/driver/sqlitedriver"
)

// BenchmarkFenced measures the lease operations on SQLite. There is no
// pgbench to compare with; SQLite admits one writer at a time, so the 16
// connection figures show queueing, not parallelism.
func BenchmarkFenced(b *testing.B) {
	drivertest.Bench(b, drivertest.BenchBackend{Backend: Backend, Open: openPool})
}

// openPool opens a client whose database/sql pool holds exactly conns
// connections, opening them all before it returns.
func openPool(tb testing.TB, url string, conns int) *fenced.Client {
	tb.Helper()
	ctx := context.Background()
	c, err := fenced.Open(ctx, url, fenced.Config{})
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	db := c.Driver().(*sqlitedriver.Driver).DB()
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	held := make([]*sql.Conn, conns)
	for i := range held {
		if held[i], err = db.Conn(ctx); err != nil {
			tb.Fatalf("connect: %v", err)
		}
	}
	for _, conn := range held {
		conn.Close()
	}
	return c
}
