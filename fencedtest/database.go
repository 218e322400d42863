package fencedtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/mysqldriver"
	_ "github.com/fenced/fenced/driver/pgdriver" // NewPostgres opens postgres: URLs
	_ "github.com/fenced/fenced/driver/sqlitedriver"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// NewSQLite returns a Client on a new SQLite file in the test's temporary
// directory, migrated, closed when the test ends.
func NewSQLite(t testing.TB, cfg fenced.Config) *fenced.Client {
	t.Helper()
	return open(t, "sqlite:"+filepath.Join(t.TempDir(), "fenced.db"), cfg)
}

// NewPostgres returns a Client on a new, empty schema of the PostgreSQL
// server at serverURL (a postgres:// URL of a database the role may create
// schemas in), migrated; the schema is dropped when the test ends. Each
// call has a schema of its own, so tests run in parallel without seeing
// each other's jobs.
func NewPostgres(t testing.TB, serverURL string, cfg fenced.Config) *fenced.Client {
	t.Helper()
	schema := "fencedtest_" + randomName()
	pgExec(t, serverURL, `CREATE SCHEMA `+schema)
	t.Cleanup(func() { pgExec(t, serverURL, `DROP SCHEMA `+schema+` CASCADE`) })
	u, err := url.Parse(serverURL)
	if err != nil {
		t.Fatalf("fencedtest: the PostgreSQL URL does not parse: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return open(t, u.String(), cfg)
}

// NewMySQL returns a Client on a new, empty database of the MySQL or
// MariaDB server at serverURL (a mysql:// URL of an existing database, as
// fenced takes it, of a role that may create databases), migrated; the
// database is dropped when the test ends.
func NewMySQL(t testing.TB, serverURL string, cfg fenced.Config) *fenced.Client {
	t.Helper()
	u, err := url.Parse(serverURL)
	if err != nil {
		t.Fatalf("fencedtest: the MySQL URL does not parse: %v", err)
	}
	name := "fencedtest_" + randomName()
	mysqlExec(t, serverURL, `CREATE DATABASE `+name+` CHARACTER SET utf8mb4`)
	t.Cleanup(func() { mysqlExec(t, serverURL, `DROP DATABASE `+name) })
	u.Path = "/" + name
	return open(t, u.String(), cfg)
}

// open opens rawURL with cfg, migrates it and closes it at the test's end.
func open(t testing.TB, rawURL string, cfg fenced.Config) *fenced.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := fenced.Open(ctx, rawURL, cfg)
	if err != nil {
		t.Fatalf("fencedtest: open the test database: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatalf("fencedtest: migrate the test database: %v", err)
	}
	return c
}

func pgExec(t testing.TB, serverURL, stmt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		t.Fatalf("fencedtest: connect to PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, stmt); err != nil {
		t.Fatalf("fencedtest: %s: %v", stmt, err)
	}
}

// mysqlExec runs stmt on the server of serverURL (fenced's mysql:// form).
func mysqlExec(t testing.TB, serverURL, stmt string) {
	t.Helper()
	mc, _, err := mysqldriver.ParseURL(serverURL)
	if err != nil {
		t.Fatalf("fencedtest: the MySQL URL: %v", err)
	}
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		t.Fatalf("fencedtest: connect to MySQL: %v", err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		t.Fatalf("fencedtest: %s: %v", stmt, err)
	}
}

// randomName is 12 random hex digits: a schema or database name no other
// test uses.
func randomName() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}
