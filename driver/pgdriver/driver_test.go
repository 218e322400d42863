package pgdriver_test

import (
	"context"
	"testing"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/drivertest"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/internal/test/testdb"
)

// Backend is the conformance-suite view of PostgreSQL.
var Backend = drivertest.Backend{
	Name:        "postgres",
	OpenDriver:  func(ctx context.Context, url string) (driver.Driver, error) { return pgdriver.Open(ctx, url) },
	NewURL:      testdb.Postgres,
	Exec:        func(t testing.TB, url, sql string) { testdb.Exec(t, url, sql) },
	Snapshot:    testdb.PostgresSnapshot,
	WaitBlocked: testdb.PostgresWaitBlocked,
	Backdate:    testdb.PostgresBackdate,
}

func TestConformance(t *testing.T) { drivertest.Run(t, Backend) }
