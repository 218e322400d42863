package mysqldriver_test

import (
	"context"
	"database/sql"
	"strconv"
	"testing"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/drivertest"
	"github.com/fenced/fenced/driver/mysqldriver"
)

// BenchmarkFenced measures the lease operations on MySQL/MariaDB, the same
// operations and connection counts as on PostgreSQL and SQLite.
func BenchmarkFenced(b *testing.B) {
	drivertest.Bench(b, drivertest.BenchBackend{Backend: Backend, Open: openPool})
}

// openPool opens a client whose pool holds exactly conns connections
// (pool_max_conns), connecting them all before it returns.
func openPool(tb testing.TB, url string, conns int) *fenced.Client {
	tb.Helper()
	ctx := context.Background()
	c, err := fenced.Open(ctx, withParam(tb, url, "pool_max_conns", strconv.Itoa(conns)), fenced.Config{})
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	db := c.Driver().(*mysqldriver.Driver).DB()
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
