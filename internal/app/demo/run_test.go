package demo

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRunReportsAMismatch(t *testing.T) {
	t.Parallel()
	table := []scenario{{"bad", "a step that differs", func(context.Context, *env) []Step {
		var tl timeline
		tl.add("A", "write", "rejected", "rejected")
		tl.add("A", "write", "rejected", "accepted")
		return tl.steps
	}}, {"good", "steps as expected", func(context.Context, *env) []Step {
		var tl timeline
		tl.add("A", "write", "rejected", "rejected")
		return tl.steps
	}}}
	var out strings.Builder
	ok, err := run(context.Background(), Options{Out: &out}, table, nil)
	if err != nil || ok || !strings.Contains(out.String(), "bad: MISMATCH") {
		t.Fatalf("ok=%v err=%v output:\n%s", ok, err, out.String())
	}
	if last := lastLine(out.String()); last != "2 scenarios on sqlite: 1 as expected; differed: bad" {
		t.Errorf("summary %q", last)
	}
	if bad, good := strings.Index(out.String(), "== bad"), strings.Index(out.String(), "== good"); bad < 0 || good < bad {
		t.Errorf("scenarios not run in the table's order:\n%s", out.String())
	}
	if Names()[0] != "stale-writer" {
		t.Errorf("the first scenario is %s, want the headline stale-writer", Names()[0])
	}
}

func TestTimelineJudgesEachStep(t *testing.T) {
	t.Parallel()
	var tl timeline
	tl.add("A", "equal", "x", "x")
	tl.check(true, "A", "judged ok", "x", "y")
	tl.add("A", "unequal", "x", "y")
	tl.check(false, "A", "judged wrong", "x", "x")
	tl.fail("A", "could not run", "x", errors.New("boom"))
	want := []bool{true, true, false, false, false}
	for i, s := range tl.steps {
		if s.OK() != want[i] {
			t.Errorf("step %d (%s): OK() = %v", i+1, s.Action, s.OK())
		}
	}
	if got := tl.steps[4].Observed; got != "error: boom" {
		t.Errorf("failed step observed %q", got)
	}
}

func TestLoserJudgedByOrderAgainstCommit(t *testing.T) {
	t.Parallel()
	commit := time.Now()
	win := &race{who: "A", committed: commit}
	before := &race{who: "B", returned: commit.Add(-time.Millisecond)}
	same := &race{who: "B", returned: commit}
	after := &race{who: "B", returned: commit.Add(time.Millisecond)}
	if blockedUntilCommit(before, win) || !blockedUntilCommit(same, win) || !blockedUntilCommit(after, win) {
		t.Error("blocked means returned at or after the winner began to commit")
	}
	if !returnedDuringHold(before, win) || returnedDuringHold(same, win) || returnedDuringHold(after, win) {
		t.Error("never waited means returned before the winner began to commit")
	}
	if got := order(before, win); !strings.HasPrefix(got, "B returned 1ms before A began to commit") {
		t.Errorf("order = %q", got)
	}
}

func TestRaceNeedsExactlyOneWinner(t *testing.T) {
	t.Parallel()
	won := func(who string, fence int64) *race { return &race{who: who, id: 7, fence: fence} }
	lost := func(who string) *race { return &race{who: who} }
	for _, c := range []struct {
		name string
		rs   []*race
		ok   bool
	}{
		{"AWins", []*race{won("A", 1), lost("B")}, true},
		{"BWins", []*race{lost("A"), won("B", 1)}, true},
		{"NobodyWins", []*race{lost("A"), lost("B")}, false},
		{"BothWin", []*race{won("A", 1), won("B", 2)}, false},
		{"WrongFence", []*race{won("A", 2), lost("B")}, false},
		{"AnError", []*race{won("A", 1), {who: "B", err: errors.New("boom")}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			win, lose, ok := split(c.rs, 7, 1)
			if ok != c.ok {
				t.Fatalf("ok = %v", ok)
			}
			if ok && (win.id != 7 || lose.id != 0) {
				t.Fatalf("winner %v, loser %v", win, lose)
			}
		})
	}
}

// lastLine is the last line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	return lines[len(lines)-1]
}
