package fenced_test

import (
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenced/fenced"
)

// FuzzParseDatabaseURL: ParseDatabaseURL never panics, refuses with
// ErrInvalid, maps each scheme to its backend, and never quotes a password
// in an error.
func FuzzParseDatabaseURL(f *testing.F) {
	for _, s := range []string{
		"", ":", "::", "sqlite:", "sqlite:x.db", "SQLITE:x.db", "sqlite3:x.db", "file:x.db", "sqlite:///abs/x.db",
		"sqlite://host/x.db", "sqlite:x.db?mode=ro", "sqlite:x.db#frag", "sqlite:a\x00b", "sqlite:../../etc/passwd",
		"sqlite:////double", "sqlite:.", "sqlite:/", "postgres://u:hunter2@h:5432/db?sslmode=disable", "postgres:db",
		"postgresql://h/db", "PostgreS://x", "mysql://root:hunter2@127.0.0.1:3306/test", "mariadb://h/db", "mysql:db",
		"redis://h", "fenced.db", "u:hunter2@h/db", "hunter2", "sqlite://u:hunter2@h/x.db", "sqlite:x.db?password=hunter2",
		"\xff:x", "sqlite:\xff.db", "postgres://\x00", "//u:hunter2@h/db",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		kind, target, err := fenced.ParseDatabaseURL(raw)
		if err != nil {
			if !errors.Is(err, fenced.ErrInvalid) {
				t.Fatalf("ParseDatabaseURL(%q) = %v (%T), not ErrInvalid", raw, err, err)
			}
			if kind != "" || target != "" {
				t.Fatalf("ParseDatabaseURL(%q) failed but returned %q, %q", raw, kind, target)
			}
			if pw := password(raw); pw != "" && strings.Contains(err.Error(), pw) {
				t.Fatalf("ParseDatabaseURL(%q) error %q quotes the password %q", raw, err, pw)
			}
			return
		}
		in := raw
		if in == "" {
			in = fenced.DefaultDatabaseURL
		}
		scheme, rest, _ := strings.Cut(in, ":")
		switch strings.ToLower(scheme) {
		case "postgres", "postgresql":
			if kind != "postgres" || target != in || !strings.HasPrefix(rest, "//") {
				t.Fatalf("ParseDatabaseURL(%q) = %q, %q", raw, kind, target)
			}
		case "mysql", "mariadb":
			if kind != "mysql" || target != in || !strings.HasPrefix(rest, "//") {
				t.Fatalf("ParseDatabaseURL(%q) = %q, %q", raw, kind, target)
			}
		case "sqlite", "sqlite3", "file":
			if kind != "sqlite" || target == "" || strings.ContainsAny(target, "?#\x00") || target != filepath.Clean(target) {
				t.Fatalf("ParseDatabaseURL(%q) = %q, %q", raw, kind, target)
			}
			if strings.HasPrefix(rest, "//") && !filepath.IsAbs(target) {
				t.Fatalf("ParseDatabaseURL(%q): sqlite:// gave a relative path %q", raw, target)
			}
			if !strings.HasPrefix(rest, "//") && target != filepath.Clean(rest) {
				t.Fatalf("ParseDatabaseURL(%q) = %q, want path %q", raw, target, filepath.Clean(rest))
			}
		default:
			t.Fatalf("ParseDatabaseURL(%q) accepted scheme %q as %q", raw, scheme, kind)
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
