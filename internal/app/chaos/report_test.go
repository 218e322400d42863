package chaos

import (
	"strings"
	"testing"
)

// TestTallyIsSortedAndReadable: counts print as "name n" pairs sorted by
// name, never in Go's map syntax.
func TestTallyIsSortedAndReadable(t *testing.T) {
	got := tally(map[faultKind]int{faultPause: 11, faultKill: 3, faultConnKill: 16})
	if want := "conn-kill 16, kill 3, pause 11"; got != want {
		t.Errorf("tally = %q, want %q", got, want)
	}
	if got := tally(map[faultKind]int{}); got != "none" {
		t.Errorf("tally of nothing = %q, want none", got)
	}
	if got := kinds(map[string]int{"job-lost": 2, "counter": 1}); got != "(counter 1, job-lost 2)" {
		t.Errorf("kinds = %q", got)
	}
	var b strings.Builder
	(&Report{StaleRejected: 6, Stale: map[string]int{"resource": 4, "lease": 2}}).WriteTable(&b)
	if out := b.String(); strings.Contains(out, "map[") || !strings.Contains(out, "6 (lease 2, resource 4)") {
		t.Errorf("report table:\n%s", out)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasSuffix(line, " ") {
			t.Errorf("line %q ends in a space", line)
		}
	}
}
