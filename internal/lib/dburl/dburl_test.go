package dburl_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
	_ "github.com/fenced/fenced/driver/sqlitedriver" // the only backend this test links
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/lib/dburl"
)

func TestBackend(t *testing.T) {
	for in, want := range map[string]fencedtype.Dialect{
		"": "sqlite", "sqlite:x.db": "sqlite", "SQLITE3:x": "sqlite", "file:x": "sqlite",
		"postgres://h/db": "postgres", "PostgreSQL://h/db": "postgres",
		"mysql://h/db": "mysql", "mariadb://h/db": "mysql",
		"redis://h": "", "fenced.db": "", "u:hunter2@h/db": "",
	} {
		if got := dburl.Backend(in); got != want {
			t.Errorf("Backend(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOpenNamesTheBackendToImport: a built-in scheme whose backend is not
// linked into the program is refused with the package to import, and
// without the password.
func TestOpenNamesTheBackendToImport(t *testing.T) {
	if _, ok := driver.Lookup("postgres"); ok {
		t.Fatal("PostgreSQL is linked into this test binary; the test needs it absent")
	}
	_, err := fenced.Open(context.Background(), "postgres://u:hunter2@h/db", fenced.Config{})
	if !errors.Is(err, fenced.ErrInvalid) || !strings.Contains(err.Error(), `"github.com/fenced/fenced/driver/pgdriver"`) {
		t.Fatalf("err = %v, want invalid naming driver/pgdriver", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err %q quotes the password", err)
	}
	c, err := fenced.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "x.db"), fenced.Config{})
	if err != nil {
		t.Fatalf("the linked backend: %v", err)
	}
	c.Close()
}

// TestPostgresProgramLinksNoOtherBackend: a program importing fenced and
// driver/pgdriver depends on neither modernc's SQLite, the MySQL driver nor
// etcd's client.
func TestPostgresProgramLinksNoOtherBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	out, err := exec.Command("go", "list", "-deps", "./testdata/pgonly").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := string(out)
	if !strings.Contains(deps, "github.com/jackc/pgx/v5\n") {
		t.Fatalf("go list -deps shows no pgx; the check is looking at the wrong program:\n%s", deps)
	}
	for _, banned := range []string{"modernc.org/sqlite", "github.com/go-sql-driver/mysql", "go.etcd.io/etcd", "fenced/driver/sqlitedriver", "fenced/driver/mysqldriver", "fenced/driver/etcddriver"} {
		if strings.Contains(deps, banned) {
			t.Errorf("a PostgreSQL-only program depends on %s", banned)
		}
	}
}
