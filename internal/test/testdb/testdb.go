// Package testdb gives each test its own real database: a fresh PostgreSQL
// schema, or a fresh SQLite file. Server URLs come from the environment
// (FENCED_TEST_POSTGRES_URL) with this machine's defaults. A test that needs
// an unreachable server skips, except under CI=true, where it fails.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "github.com/fenced/fenced/driver/all" // tests open every backend by URL
	"github.com/jackc/pgx/v5"
)

// DefaultPostgresURL is used when FENCED_TEST_POSTGRES_URL is unset.
const DefaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// PostgresURL is the server the tests use.
func PostgresURL() string {
	if u := os.Getenv("FENCED_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return DefaultPostgresURL
}

var (
	pgOnce sync.Once
	pgErr  error
)

// requireServer skips (or under CI=true fails) when err says the server is
// unreachable.
func requireServer(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required under CI=true: %v", what, err)
	}
	t.Skipf("%s unreachable: %v", what, err)
}

// Postgres creates an empty schema for this test, dropped when it ends, and
// returns a URL whose connections use it (search_path).
func Postgres(t testing.TB) string {
	t.Helper()
	base := PostgresURL()
	requirePostgres(t)
	schema := "fenced_t_" + randomHex(6)
	exec(t, base, `CREATE SCHEMA `+schema)
	t.Cleanup(func() { exec(t, base, `DROP SCHEMA `+schema+` CASCADE`) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", base, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("application_name", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// requirePostgres skips (or under CI=true fails) when the shared test
// server is unreachable.
func requirePostgres(t testing.TB) {
	t.Helper()
	base := PostgresURL()
	pgOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close(ctx)
		}
		pgErr = err
	})
	requireServer(t, "PostgreSQL at "+base, pgErr)
}

// Exec runs one statement on a fresh connection to url.
func Exec(t testing.TB, url, sql string, args ...any) {
	t.Helper()
	exec(t, url, sql, args...)
}

func exec(t testing.TB, url, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// SQLite returns the URL of a new SQLite file in the test's temp directory.
func SQLite(t testing.TB) string {
	t.Helper()
	return "sqlite:" + filepath.Join(t.TempDir(), "fenced.db")
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
