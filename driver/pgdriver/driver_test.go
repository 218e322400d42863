package pgdriver_test

import (
	"testing"

	"github.com/fenced/fenced/fencedtest"
	"github.com/fenced/fenced/internal/testdb"
)

// Backend is the conformance-suite view of PostgreSQL.
var Backend = fencedtest.Backend{
	Name:        "postgres",
	NewURL:      testdb.Postgres,
	Exec:        func(t testing.TB, url, sql string) { testdb.Exec(t, url, sql) },
	Snapshot:    testdb.PostgresSnapshot,
	WaitBlocked: testdb.PostgresWaitBlocked,
}

func TestConformance(t *testing.T) { fencedtest.Run(t, Backend) }
