package testdb

import (
	"context"
	"database/sql"
	"io"
	"os"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// sqlitePath is the file of a URL made by SQLite.
func sqlitePath(url string) string { return strings.TrimPrefix(url, "sqlite:") }

// SQLiteExec runs one statement on url's file.
func SQLiteExec(t testing.TB, url, query string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+sqlitePath(url)+"?_pragma=busy_timeout(30000)")
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(context.Background(), query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// SQLiteSnapshot copies url's file (a "backup") and returns a function that
// puts the copy back in its place, as restoring a file backup would.
func SQLiteSnapshot(t testing.TB, url string) func() {
	t.Helper()
	path := sqlitePath(url)
	snap := path + ".snapshot"
	SQLiteExec(t, url, `VACUUM INTO '`+strings.ReplaceAll(snap, "'", "''")+`'`)
	return func() {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
				t.Fatalf("remove: %v", err)
			}
		}
		if err := copyFile(snap, path); err != nil {
			t.Fatalf("restore: %v", err)
		}
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
