package pgdriver_test

import (
	"context"
	"testing"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/testdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migratedClient is a Client on a fresh migrated test database, closed when
// the test ends.
func migratedClient(t *testing.T) *fenced.Client {
	t.Helper()
	return migratedClientOf(t, testdb.Postgres(t))
}

// migratedClientOf is a Client of the database at url, migrated, closed
// when the test ends.
func migratedClientOf(t *testing.T, url string) *fenced.Client {
	t.Helper()
	c := openClient(t, url)
	if _, err := c.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c
}

// openClient is a Client of the database at url, closed when the test ends.
func openClient(t *testing.T, url string) *fenced.Client {
	t.Helper()
	c, err := fenced.Open(context.Background(), url, fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// twoClients are two Clients of one fresh migrated test database (two
// processes, as far as the database can tell), closed when the test ends.
func twoClients(t *testing.T) (a, b *fenced.Client) {
	t.Helper()
	url := testdb.Postgres(t)
	return migratedClientOf(t, url), openClient(t, url)
}

// explain returns the lines of EXPLAIN (options) of sql with args, run in a
// transaction that is rolled back (so EXPLAIN ANALYZE changes nothing).
// setting, unless empty, is set for that transaction first (SET LOCAL),
// for instance "plan_cache_mode = force_generic_plan".
func explain(t *testing.T, pool *pgxpool.Pool, options, setting, sql string, args ...any) []string {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if setting != "" {
		if _, err := tx.Exec(ctx, "SET LOCAL "+setting); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := tx.Query(ctx, "EXPLAIN ("+options+") "+sql, args...)
	if err != nil {
		t.Fatalf("explain %.60q: %v", sql, err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("explain %.60q: %v", sql, err)
	}
	return plan
}
