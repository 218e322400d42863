package sqlitedriver_test

import (
	"context"
	"testing"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/drivertest"
	"github.com/fenced/fenced/driver/sqlitedriver"
	"github.com/fenced/fenced/internal/test/testdb"
)

// Backend is the conformance-suite view of SQLite. SQLite cannot show a
// waiter on its write lock, so the suite gives a blocked call a bounded
// chance to return instead of observing the wait.
var Backend = drivertest.Backend{
	Name:       "sqlite",
	OpenDriver: openDriver,
	NewURL:     testdb.SQLite,
	Exec:       testdb.SQLiteExec,
	Snapshot:   testdb.SQLiteSnapshot,
	Backdate:   testdb.SQLiteBackdate,
}

func TestConformance(t *testing.T) { drivertest.Run(t, Backend) }

// openDriver is the conformance suite's constructor: a sqlite: URL.
func openDriver(ctx context.Context, url string) (driver.Driver, error) {
	path, err := sqlitedriver.ParseURL(url)
	if err != nil {
		return nil, err
	}
	return sqlitedriver.Open(ctx, path)
}
