package testdb

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresSnapshot copies the fenced tables of url's schema (a "backup") and
// returns a function that restores them, as a dump and restore would.
func PostgresSnapshot(t testing.TB, url string) func() {
	t.Helper()
	tables := []string{"fenced_meta", "fenced_leases", "fenced_resources", "fenced_resource_ops"}
	for _, tb := range tables {
		exec(t, url, `CREATE TABLE snap_`+tb+` AS TABLE `+tb)
	}
	return func() {
		for _, tb := range tables {
			exec(t, url, `DELETE FROM `+tb)
			exec(t, url, `INSERT INTO `+tb+` SELECT * FROM snap_`+tb)
		}
	}
}

// PostgresWaitBlocked returns once a connection of url's test schema (its
// application_name) waits on a lock.
func PostgresWaitBlocked(t testing.TB, rawURL string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("parse url: %v", err)
	}
	app := u.Query().Get("application_name")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, PostgresURL())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	for {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock'`, app).Scan(&n)
		if err != nil {
			t.Fatalf("no connection of %s blocked on a lock: %v", app, err)
		}
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
