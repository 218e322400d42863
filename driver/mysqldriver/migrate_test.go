package mysqldriver_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/testdb"
)

// latestMigration is the number of migrations in migrations/.
const latestMigration = 15

func TestConcurrentMigrationsApplyOnce(t *testing.T) {
	t.Parallel()
	url := testdb.MySQL(t)
	var mu sync.Mutex
	applied := map[int]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			c, err := fenced.Open(ctx(t), url, fenced.Config{})
			if err != nil {
				t.Errorf("open: %v", err)
				return
			}
			defer c.Close()
			vs, err := c.Migrate(ctx(t))
			if err != nil {
				t.Errorf("migrate: %v", err)
				return
			}
			mu.Lock()
			for _, v := range vs {
				applied[v]++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(applied) != latestMigration {
		t.Fatalf("applied = %v, want versions 1 to %d once each", applied, latestMigration)
	}
	for v := 1; v <= latestMigration; v++ {
		if applied[v] != 1 {
			t.Fatalf("applied = %v, want versions 1 to %d once each", applied, latestMigration)
		}
	}
	if vs, err := open(t, url).Migrate(ctx(t)); err != nil || len(vs) != 0 {
		t.Fatalf("migrate again = %v, %v", vs, err)
	}
}

// TestMigrationCutShortRunsAgain: DDL commits at once, so a migrator can
// stop after a migration's statements and before recording it. The next
// run applies it again whole, which must succeed.
func TestMigrationCutShortRunsAgain(t *testing.T) {
	t.Parallel()
	url, c := setup(t)
	for v := latestMigration; v >= 1; v-- {
		testdb.MySQLExec(t, url, `DELETE FROM fenced_schema_migrations WHERE version >= ?`, v)
		vs, err := c.Migrate(ctx(t))
		if err != nil || len(vs) != latestMigration+1-v {
			t.Fatalf("migrate after version %d was not recorded = %v, %v", v, vs, err)
		}
	}
	var n int
	must(t, openDB(t, url).QueryRowContext(ctx(t), `SELECT COUNT(*) FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'fenced_resource_ops' AND COLUMN_NAME = 'digest'`).Scan(&n), "read the catalog")
	if n != 1 {
		t.Fatalf("fenced_resource_ops has %d digest columns", n)
	}
	// Migration 9 replaced the claim indexes: a replay of migration 4 must
	// not bring its index back.
	var indexes []string
	rows, err := openDB(t, url).QueryContext(ctx(t), `SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'fenced_jobs' AND INDEX_NAME LIKE 'fenced_jobs_%' ORDER BY 1`)
	must(t, err, "read the catalog")
	for rows.Next() {
		var name string
		must(t, rows.Scan(&name), "scan the catalog")
		indexes = append(indexes, name)
	}
	must(t, rows.Err(), "read the catalog")
	want := []string{"fenced_jobs_finished", "fenced_jobs_idempotency_key", "fenced_jobs_key_running", "fenced_jobs_queued",
		"fenced_jobs_queued_kind", "fenced_jobs_sequence", "fenced_jobs_state", "fenced_jobs_task", "fenced_jobs_unique"}
	if !slices.Equal(indexes, want) {
		t.Fatalf("fenced_jobs has indexes %v, want %v", indexes, want)
	}
}
