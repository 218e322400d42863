package demo

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Step is one row of a timeline: who did what, what fenced promises, and
// what the database actually answered.
type Step struct {
	Who      string
	Action   string
	Expected string
	Observed string
	// Match decides whether Observed meets Expected; nil means they must be
	// equal.
	Match func() bool
}

// OK reports whether the step went as expected.
func (s Step) OK() bool {
	if s.Match != nil {
		return s.Match()
	}
	return s.Expected == s.Observed
}

// printSteps writes the timeline and reports whether every step matched.
func printSteps(w io.Writer, steps []Step) bool {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tWHO\tACTION\tEXPECTED\tOBSERVED\t")
	ok := true
	for i, s := range steps {
		mark := "ok"
		if !s.OK() {
			mark, ok = "MISMATCH", false
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", i+1, s.Who, s.Action, s.Expected, s.Observed, mark)
	}
	tw.Flush()
	return ok
}
