package main

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"

	"github.com/fenced/fenced/internal/test/testdb"
)

// TestReadOnlyRoleReads: a PostgreSQL role that may only read runs the
// commands that only read; the database is up to date, so nothing tries
// to migrate it (which needs CREATE on the schema). A write is refused by
// the server.
func TestReadOnlyRoleReads(t *testing.T) {
	t.Parallel()
	db := testdb.Postgres(t)
	newCLI(t, db).ok("lease", "acquire", "report", "--owner", "w1", "--ttl", "5m")
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	var b [6]byte
	rand.Read(b[:])
	role := "fenced_ro_" + hex.EncodeToString(b[:])
	base := testdb.PostgresURL()
	testdb.Exec(t, base, `CREATE ROLE `+role+` LOGIN`)
	t.Cleanup(func() {
		testdb.Exec(t, base, `DROP OWNED BY `+role)
		testdb.Exec(t, base, `DROP ROLE `+role)
	})
	testdb.Exec(t, base, `GRANT USAGE ON SCHEMA `+schema+` TO `+role)
	testdb.Exec(t, base, `GRANT SELECT ON ALL TABLES IN SCHEMA `+schema+` TO `+role)
	u.User = url.User(role)
	reader := newCLI(t, u.String())
	contains(t, "lease ls by a read-only role", reader.ok("lease", "ls"), "report")
	contains(t, "lease show by a read-only role", reader.ok("lease", "show", "report"), "w1")
	r := reader.fails(exitError, "lease", "acquire", "other", "--owner", "w2")
	contains(t, "acquire by a read-only role", r.stderr, "permission denied")
}
