package demo

import (
	"strings"
	"testing"
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
