package sqlitedriver_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fenced/fenced/driver/sqlitedriver"
	"github.com/fenced/fenced/fencedtype"
)

// TestOpenErrorsNameThePathAndTheCause: where SQLite says only "unable to
// open database file", Open says which path and why. (Read-only files and
// directories are tested through the command, cmd/fenced, which can run as
// a user they bind.)
func TestOpenErrorsNameThePathAndTheCause(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "plain")
	if err := os.WriteFile(file, []byte("not a database, not empty either: SQLite reads a header here"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "missing", "f.db"), "cannot open sqlite database " + filepath.Join(dir, "missing", "f.db") +
			": directory " + filepath.Join(dir, "missing") + " does not exist"},
		{dir, "cannot open sqlite database " + dir + ": " + dir + " is a directory"},
		{filepath.Join(file, "f.db"), "cannot open sqlite database " + filepath.Join(file, "f.db") + ": " + file + " is not a directory"},
		{file, "cannot open sqlite database " + file + ": " + file + " is not a SQLite database"},
	} {
		d, err := sqlitedriver.Open(context.Background(), c.path)
		if err == nil {
			d.Close()
			t.Errorf("open %s succeeded", c.path)
			continue
		}
		var ce *fencedtype.ConnectError
		if !errors.As(err, &ce) || err.Error() != c.want {
			t.Errorf("open %s:\n got %v\nwant %s", c.path, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed open created the missing directory: %v", err)
	}
}
