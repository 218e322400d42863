package demo

import (
	"fmt"
	"io"
	"strings"

	"github.com/fenced/fenced/internal/lib/display"
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

// Layout of a printed timeline: a step's number and who take the first
// columns of its first line, its action the rest, up to the mark; its
// expected and observed outcomes follow on lines of their own, under the
// action, so that each is read whole (one line when they are the same).
const (
	numWidth  = 4 // "12  "
	whoWidth  = 5 // "A+B  "
	indent    = numWidth + whoWidth
	markWidth = len("MISMATCH")
)

// printSteps writes the timeline, no line wider than Width, and reports
// whether every step matched.
func printSteps(w io.Writer, steps []Step) bool {
	var b strings.Builder
	line := func(s string) { b.WriteString(strings.TrimRight(s, " ") + "\n") }
	// outcome writes label and text under the action, wrapped under text.
	outcome := func(label, text string) {
		for j, t := range display.Wrap(text, Width-indent-len(label)) {
			if j > 0 {
				label = strings.Repeat(" ", len(label))
			}
			line(strings.Repeat(" ", indent) + label + t)
		}
	}
	line(pad("#", numWidth) + pad("WHO", whoWidth) + "ACTION, then what fenced promises and what the database answered")
	ok := true
	for i, s := range steps {
		mark := "ok"
		if !s.OK() {
			mark, ok = "MISMATCH", false
		}
		actionWidth := Width - indent - 2 - markWidth
		for j, a := range display.Wrap(s.Action, actionWidth) {
			head := strings.Repeat(" ", indent)
			if j == 0 {
				head = pad(fmt.Sprint(i+1), numWidth) + pad(s.Who, whoWidth)
				a = pad(a, actionWidth+2) + fmt.Sprintf("%*s", markWidth, mark)
			}
			line(head + a)
		}
		if s.Expected == s.Observed {
			outcome("expected and observed: ", s.Observed)
			continue
		}
		outcome("expected: ", s.Expected)
		outcome("observed: ", s.Observed)
	}
	io.WriteString(w, b.String())
	return ok
}

// pad is s followed by spaces up to width display columns.
func pad(s string, width int) string {
	return s + strings.Repeat(" ", max(0, width-display.Width(s)))
}
