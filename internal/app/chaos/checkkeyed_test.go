package chaos

import (
	"testing"
	"time"
)

// at is a time n milliseconds into a run, in microseconds.
func at(n int) int64 {
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Millisecond).UnixMicro()
}

// attemptRows is an attempt's START at s and, when e > 0, END at e.
func attemptRows(key string, job, fence int64, s, e int) []keyedRow {
	rows := []keyedRow{{job: job, fence: fence, key: key, mark: "start", at: at(s)}}
	if e > 0 {
		rows = append(rows, keyedRow{job: job, fence: fence, key: key, mark: "end", at: at(e)})
	}
	return rows
}

func concat(rss ...[]keyedRow) []keyedRow {
	var out []keyedRow
	for _, rs := range rss {
		out = append(out, rs...)
	}
	return out
}

// TestJudgeKeyedAcceptsAttemptsWithinTheirLimits: back-to-back attempts on
// a limit-1 key, two at once on a limit-2 key, and a stale attempt whose
// END never committed (its interval ends at its START) are all fine.
func TestJudgeKeyedAcceptsAttemptsWithinTheirLimits(t *testing.T) {
	limits := map[string]int{"one": 1, "two": 2}
	rows := concat(
		attemptRows("one", 1, 1, 0, 100),
		attemptRows("one", 1, 2, 0+300, 0), // paused job 2's attempt, no END: ends at 300
		attemptRows("one", 2, 1, 101, 200),
		attemptRows("one", 3, 1, 301, 400),
		attemptRows("two", 4, 1, 0, 100),
		attemptRows("two", 5, 1, 50, 150),
		attemptRows("two", 6, 1, 101, 200),
	)
	v := judgeKeyed(rows, limits, showAt(postgresDialect))
	if len(v.overlaps)+len(v.lateWrites) != 0 {
		t.Fatalf("anomalies in a legal ledger: %v %v", v.overlaps, v.lateWrites)
	}
	if v.attempts != 7 || v.unended != 1 || v.peak[1] != 1 || v.peak[2] != 2 {
		t.Errorf("attempts %d, unended %d, peaks %v; want 7, 1, limit 1 peak 1, limit 2 peak 2", v.attempts, v.unended, v.peak)
	}
}

// TestJudgeKeyedFindsOverlapsAndLateWrites: a paused holder of a limit-1
// key that writes its END after the next attempt started, and a third
// attempt at once on a limit-2 key, are caught; so is an attempt that
// starts at the very time another ends (intervals are closed).
func TestJudgeKeyedFindsOverlapsAndLateWrites(t *testing.T) {
	limits := map[string]int{"one": 1, "two": 2, "edge": 1}
	v := judgeKeyed(concat(
		attemptRows("one", 1, 1, 0, 500), // woke from a pause, END at 500
		attemptRows("one", 1, 2, 200, 300),
		attemptRows("two", 2, 1, 0, 100),
		attemptRows("two", 3, 1, 10, 100),
		attemptRows("two", 4, 1, 20, 30),
		attemptRows("edge", 5, 1, 0, 100),
		attemptRows("edge", 6, 1, 100, 200),
	), limits, showAt(postgresDialect))
	if len(v.overlaps) != 3 {
		t.Errorf("overlaps %d, want 3 (one, two, edge): %v", len(v.overlaps), v.overlaps)
	}
	if len(v.lateWrites) != 4 {
		t.Errorf("late writes %d, want 4 (job 1 on one, jobs 2 and 3 on two, job 5 on edge): %v", len(v.lateWrites), v.lateWrites)
	}
	if v.peak[1] != 2 || v.peak[2] != 3 {
		t.Errorf("peaks %v, want limit 1 peak 2, limit 2 peak 3", v.peak)
	}
}
