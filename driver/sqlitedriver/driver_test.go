package sqlitedriver_test

import (
	"testing"

	"github.com/fenced/fenced/fencedtest"
	"github.com/fenced/fenced/internal/testdb"
)

// Backend is the conformance-suite view of SQLite. SQLite cannot show a
// waiter on its write lock, so the suite gives a blocked call a bounded
// chance to return instead of observing the wait.
var Backend = fencedtest.Backend{
	Name:     "sqlite",
	NewURL:   testdb.SQLite,
	Exec:     testdb.SQLiteExec,
	Snapshot: testdb.SQLiteSnapshot,
}

func TestConformance(t *testing.T) { fencedtest.Run(t, Backend) }
