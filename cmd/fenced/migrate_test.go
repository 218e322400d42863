package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenced/fenced/internal/test/testdb"
)

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		out := c.ok("migrate")
		if !strings.HasPrefix(out, "applied migration 1\n") {
			t.Errorf("first migrate: %q, want the applied versions", out)
		}
		if out := c.ok("migrate"); out != "up to date\n" {
			t.Errorf("second migrate: %q, want up to date", out)
		}
		if out := c.ok("migrate", "--json"); out != `{"applied":[]}`+"\n" {
			t.Errorf("migrate --json: %q", out)
		}
	})
}

// readCommands are the commands that only read. They never migrate: on a
// database not migrated they fail saying to run fenced migrate.
var readCommands = [][]string{
	{"lease", "ls"}, {"lease", "show", "x"},
	{"semaphore", "ls"}, {"semaphore", "show", "x"},
	{"resource", "show", "x"},
	{"job", "ls"}, {"job", "show", "1"}, {"job", "counts"}, {"job", "slots"}, {"job", "limit", "ls"},
	{"queue", "ls"},
}

// TestOnlyCommandsThatWriteMigrate: a command that only reads, pointed at
// a database never migrated, creates nothing there (not the schema, not a
// SQLite file) and says to run fenced migrate; a command that writes
// migrates the database first and works.
func TestOnlyCommandsThatWriteMigrate(t *testing.T) {
	t.Parallel()
	for _, b := range []struct {
		name, want string
		url        func(testing.TB) string
	}{
		{"SQLite", `is not migrated: it has never been migrated (run "fenced migrate", or Client.Migrate)`, emptySQLite},
		{"SQLiteFileMissing", `database not migrated: `, testdb.SQLite},
		{"PostgreSQL", `the postgres database is not migrated: it has never been migrated (run "fenced migrate", or Client.Migrate)`, testdb.Postgres},
		{"MySQL", `the mysql database is not migrated: it has never been migrated (run "fenced migrate", or Client.Migrate)`, testdb.MySQL},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			c := newCLI(t, b.url(t))
			for _, args := range readCommands {
				r := c.fails(exitError, args...)
				if !strings.Contains(r.stderr, b.want) {
					t.Errorf("fenced %s on a database never migrated: %q, want it to say %q", strings.Join(args, " "), r.stderr, b.want)
				}
			}
			if path, ok := strings.CutPrefix(c.db, "sqlite:"); ok && b.name == "SQLiteFileMissing" {
				if _, err := os.Stat(path); !os.IsNotExist(err) {
					t.Errorf("a command that reads created %s: %v", path, err)
				}
			}
			if out := c.ok("lease", "acquire", "report", "--owner", "w1", "--ttl", "1m"); !strings.Contains(out, "fence") {
				t.Errorf("lease acquire on a database never migrated: %q", out)
			}
			if out := c.ok("migrate"); out != "up to date\n" {
				t.Errorf("migrate after a command that writes: %q, want up to date", out)
			}
			for _, args := range readCommands[:1] {
				c.ok(args...)
			}
		})
	}
}

// emptySQLite is a SQLite file that exists but holds no fenced table.
func emptySQLite(t testing.TB) string {
	url := "sqlite:" + filepath.Join(t.TempDir(), "empty.db")
	testdb.SQLiteExec(t, url, `CREATE TABLE not_fenced (x INTEGER)`)
	return url
}
