package demo

import (
	"strings"
	"testing"

	"github.com/fenced/fenced/internal/lib/display"
)

func TestMismatchIsReported(t *testing.T) {
	var out strings.Builder
	ok := printSteps(&out, []Step{
		{Who: "A", Action: "write", Expected: "rejected", Observed: "rejected"},
		{Who: "A", Action: "write", Expected: "rejected", Observed: "accepted"},
	})
	if ok || !strings.Contains(out.String(), "MISMATCH") {
		t.Fatalf("ok=%v output:\n%s", ok, out.String())
	}
	if !printSteps(&out, []Step{{Expected: "x", Observed: "y", Match: func() bool { return true }}}) {
		t.Fatal("Match not honoured")
	}
}

// A timeline fits Width columns whatever its texts: the action and the
// outcomes wrap, nothing is lost, and an outcome observed as expected is
// printed once.
func TestStepsFitWidth(t *testing.T) {
	long := strings.Repeat("word ", 40) + strings.Repeat("x", 150)
	var out strings.Builder
	printSteps(&out, []Step{
		{Who: "A+B", Action: long, Expected: long, Observed: "short", Match: func() bool { return true }},
		{Who: "—", Action: "read", Expected: "rejected: stale (current fence 2)", Observed: "rejected: stale (current fence 2)"},
		{Who: "B", Action: "write", Expected: "accepted", Observed: "rejected"},
	})
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if display.Width(line) > Width || strings.HasSuffix(line, " ") {
			t.Errorf("line of width %d: %q", display.Width(line), line)
		}
	}
	s := out.String()
	if got := strings.Count(strings.Join(strings.Fields(s), ""), strings.Repeat("x", 150)); got != 2 {
		t.Errorf("the long word appears %d times, want 2 (action and expected):\n%s", got, s)
	}
	for _, want := range []string{
		"expected and observed: rejected: stale (current fence 2)\n",
		"expected: accepted\n", "observed: rejected\n",
		"MISMATCH\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}
