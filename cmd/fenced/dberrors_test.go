package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestConnectErrorsAreOneLine: a database that cannot be reached or opened
// fails every command, reading or writing, with one line of the same shape
// on each backend: where, and the cause; never a password, never "migrate".
func TestConnectErrorsAreOneLine(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "missing")
	for _, c := range []struct{ db, want string }{
		{"postgres://nobody:s3cret-pw@127.0.0.1:1/x", "fenced: cannot connect to postgres at 127.0.0.1:1: connection refused\n"},
		{"mysql://nobody:s3cret-pw@127.0.0.1:1/x", "fenced: cannot connect to mysql at 127.0.0.1:1: connection refused\n"},
		{"sqlite:" + filepath.Join(missing, "f.db"),
			"fenced: cannot open sqlite database " + filepath.Join(missing, "f.db") + ": directory " + missing + " does not exist\n"},
	} {
		cl := newCLI(t, c.db)
		for _, args := range [][]string{{"lease", "ls"}, {"lease", "acquire", "x", "--owner", "w"}} {
			if r := cl.fails(exitError, args...); r.stderr != c.want {
				t.Errorf("%s %s:\n got %q\nwant %q", redactURL(c.db), strings.Join(args, " "), r.stderr, c.want)
			}
		}
	}
}
