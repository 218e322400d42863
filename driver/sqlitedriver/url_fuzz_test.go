package sqlitedriver_test

import (
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenced/fenced/driver/sqlitedriver"
	"github.com/fenced/fenced/fencedtype"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		"sqlite:fenced.db":    "fenced.db",
		"sqlite:rel/dir/x.db": "rel/dir/x.db",
		"sqlite:///abs/x.db":  "/abs/x.db",
		"SQLite3:x.db":        "x.db",
		"file:a/../x.db":      "x.db",
	}
	for in, want := range good {
		if got, err := sqlitedriver.ParseURL(in); err != nil || got != want {
			t.Errorf("ParseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"fenced.db", "redis://h", "sqlite:", "sqlite://host/x.db", "sqlite:x.db?mode=ro", "postgres://h/db"} {
		if _, err := sqlitedriver.ParseURL(in); !errors.Is(err, fencedtype.ErrInvalid) {
			t.Errorf("ParseURL(%q) err = %v, want invalid", in, err)
		}
	}
}

// FuzzParseURL: ParseURL never panics, refuses with ErrInvalid, accepts
// only the sqlite schemes, returns a clean path without a query, fragment
// or NUL, absolute for sqlite:///, and never quotes a password in an error.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"", ":", "::", "sqlite:", "sqlite:x.db", "SQLITE:x.db", "sqlite3:x.db", "file:x.db", "sqlite:///abs/x.db",
		"sqlite://host/x.db", "sqlite:x.db?mode=ro", "sqlite:x.db#frag", "sqlite:a\x00b", "sqlite:../../etc/passwd",
		"sqlite:////double", "sqlite:.", "sqlite:/", "postgres://u:hunter2@h:5432/db?sslmode=disable", "mysql:db",
		"redis://h", "fenced.db", "u:hunter2@h/db", "hunter2", "sqlite://u:hunter2@h/x.db", "sqlite:x.db?password=hunter2",
		"\xff:x", "sqlite:\xff.db", "//u:hunter2@h/db",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		path, err := sqlitedriver.ParseURL(raw)
		if err != nil {
			if !errors.Is(err, fencedtype.ErrInvalid) {
				t.Fatalf("ParseURL(%q) = %v (%T), not ErrInvalid", raw, err, err)
			}
			if path != "" {
				t.Fatalf("ParseURL(%q) failed but returned %q", raw, path)
			}
			if pw := password(raw); pw != "" && strings.Contains(err.Error(), pw) {
				t.Fatalf("ParseURL(%q) error %q quotes the password %q", raw, err, pw)
			}
			return
		}
		scheme, rest, _ := strings.Cut(raw, ":")
		switch strings.ToLower(scheme) {
		case "sqlite", "sqlite3", "file":
		default:
			t.Fatalf("ParseURL(%q) accepted scheme %q", raw, scheme)
		}
		if path == "" || strings.ContainsAny(path, "?#\x00") || path != filepath.Clean(path) {
			t.Fatalf("ParseURL(%q) = %q", raw, path)
		}
		if strings.HasPrefix(rest, "//") && !filepath.IsAbs(path) {
			t.Fatalf("ParseURL(%q): sqlite:// gave a relative path %q", raw, path)
		}
		if !strings.HasPrefix(rest, "//") && path != filepath.Clean(rest) {
			t.Fatalf("ParseURL(%q) = %q, want path %q", raw, path, filepath.Clean(rest))
		}
	})
}

// password is the password url.Parse finds in raw, or "" (also for one too
// short to search for without false alarms).
func password(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return ""
	}
	if pw, ok := u.User.Password(); ok && len(pw) >= 4 {
		return pw
	}
	return ""
}
