package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenced/fenced/internal/lib/display"
)

// Look-alike names are distinct leases and must look distinct: the acquire
// message, "lease ls" and "lease show" escape them with one helper, and the
// table stays aligned by display width (a combining mark takes no column,
// a wide character two).
func TestLookAlikeNamesAreEscapedAlikeAndAligned(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "sqlite:"+filepath.Join(t.TempDir(), "f.db"))
	names := []string{"caf\u00e9", "cafe\u0301", "ab", "a\u200bb", "日本"}
	for _, n := range names {
		out := c.ok("lease", "acquire", n, "--owner", "w\u200b")
		want := "acquired lease " + display.Quote(n) + ": owner " + `"w\u200b"`
		if !strings.HasPrefix(out, want) {
			t.Errorf("acquire %+q printed %q, want it to start %q", n, out, want)
		}
	}
	out := c.ok("lease", "ls")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(names)+1 {
		t.Fatalf("lease ls:\n%s", out)
	}
	seen := map[string]bool{}
	col := -1
	for _, line := range lines[1:] {
		cell, rest, _ := strings.Cut(line, "  ")
		if seen[cell] {
			t.Errorf("two leases shown as %q:\n%s", cell, out)
		}
		seen[cell] = true
		// The owner column starts at the same display column on every row.
		at := display.Width(line) - display.Width(strings.TrimLeft(rest, " "))
		if col >= 0 && at != col {
			t.Errorf("misaligned table (owner at column %d, not %d):\n%s", at, col, out)
		}
		col = at
	}
	for _, n := range names {
		if !seen[display.Name(n)] {
			t.Errorf("lease ls does not show %+q as %s:\n%s", n, display.Name(n), out)
		}
		if show := c.ok("lease", "show", n); !strings.Contains(show, display.Name(n)+" ") {
			t.Errorf("lease show %+q:\n%s", n, show)
		}
	}
	// Values and keys in messages too.
	if out := c.ok("resource", "write", "k\u200b", "--fence", "1", "--value", "x\u202e"); !strings.Contains(out, `"k\u200b"`) {
		t.Errorf("resource write: %q", out)
	}
	if out := c.ok("resource", "show", "k\u200b"); !strings.Contains(out, `"x\u202e"`) || !strings.Contains(out, `"k\u200b"`) {
		t.Errorf("resource show:\n%s", out)
	}
	r := c.fails(3, "lease", "acquire", "cafe\u0301", "--owner", "other")
	contains(t, "held message", r.stderr, `lease "cafe\u0301" is held by "w\u200b"`)
}
