package driver

import (
	"testing"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

// A completion repeats another when its output is the same JSON value,
// however a backend wrote the stored one back: keys in another order,
// spaces, escapes and numbers spelled another way do not matter; any other
// difference does.
func TestSameEndComparesOutputsAsJSONValues(t *testing.T) {
	t.Parallel()
	finished := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	row := &fencedtype.Job{Fence: 3, State: fencedtype.JobSucceeded, FinishedAt: &finished,
		Output: []byte(`{"a": [1, 2.5, {"x": null}], "b": "é", "c": true}`)}
	for out, same := range map[string]bool{
		`{"a":[1,2.5,{"x":null}],"b":"é","c":true}`:          true,
		`{"c":true,"b":"\u00e9","a":[1.0,25e-1,{"x":null}]}`: true,
		`{"a":[1,2.5,{"x":null}],"b":"é","c":false}`:         false,
		`{"a":[2,1.5,{"x":null}],"b":"é","c":true}`:          false,
		`{"a":[1,2.5,{"x":null}],"b":"é"}`:                   false,
		`{"a":[1,2.5,{"x":null}],"b":"é","c":true,"d":1}`:    false,
		`{"a":[1,2.5,{}],"b":"é","c":true}`:                  false,
		`{"a":[1,2.5,{"x":null},0],"b":"é","c":true}`:        false,
		`{"a":["1",2.5,{"x":null}],"b":"é","c":true}`:        false,
		`[{"a":[1,2.5,{"x":null}],"b":"é","c":true}]`:        false,
		``: false,
	} {
		e := fencedtype.JobEnd{Ref: fencedtype.JobRef{ID: 1, Fence: 3}, Kind: fencedtype.EndComplete}
		if out != "" {
			e.Output = []byte(out)
		}
		at, got := SameEnd(e, row, nil)
		if got != same || (same && !at.Equal(finished)) {
			t.Errorf("output %s: SameEnd = %v at %v, want %v", out, got, at, same)
		}
	}
	none := &fencedtype.Job{Fence: 3, State: fencedtype.JobSucceeded, FinishedAt: &finished}
	if _, ok := SameEnd(fencedtype.JobEnd{Ref: fencedtype.JobRef{ID: 1, Fence: 3}, Kind: fencedtype.EndComplete}, none, nil); !ok {
		t.Error("a completion without output does not repeat one without output")
	}
	if _, ok := SameEnd(fencedtype.JobEnd{Ref: fencedtype.JobRef{ID: 1, Fence: 2}, Kind: fencedtype.EndComplete}, none, nil); ok {
		t.Error("a completion of fence 2 repeats the completion of fence 3")
	}
}

// An end other than a completion repeats the one its attempt's history
// records when that kind leaves that outcome and the messages are the same.
func TestSameEndMatchesTheAttemptsHistory(t *testing.T) {
	t.Parallel()
	ended := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	row := &fencedtype.Job{Fence: 4, State: fencedtype.JobQueued}
	for _, tc := range []struct {
		kind    fencedtype.EndKind
		err     string
		outcome string
		same    bool
	}{
		{fencedtype.EndFail, "boom", fencedtype.OutcomeRetry, true},
		{fencedtype.EndFail, "boom", fencedtype.OutcomeFailed, true},
		{fencedtype.EndFail, "boom", fencedtype.OutcomeCancelled, true},
		{fencedtype.EndFail, "bang", fencedtype.OutcomeRetry, false},
		{fencedtype.EndFail, "boom", fencedtype.OutcomeSnoozed, false},
		{fencedtype.EndFail, "boom", fencedtype.OutcomeLost, false},
		{fencedtype.EndSnooze, "boom", fencedtype.OutcomeSnoozed, true},
		{fencedtype.EndSnooze, "boom", fencedtype.OutcomeRetry, false},
		{fencedtype.EndCancel, "boom", fencedtype.OutcomeCancelled, true},
		{fencedtype.EndCancel, "boom", fencedtype.OutcomeFailed, false},
		{fencedtype.EndComplete, "boom", fencedtype.OutcomeSucceeded, false}, // a completion is read from the row
	} {
		e := fencedtype.JobEnd{Ref: fencedtype.JobRef{ID: 1, Fence: 3}, Kind: tc.kind, Error: tc.err}
		a := &fencedtype.JobAttempt{Fence: 3, EndedAt: &ended, Outcome: tc.outcome, Error: "boom"}
		at, got := SameEnd(e, row, a)
		if got != tc.same || (got && !at.Equal(ended)) {
			t.Errorf("%s %q after %s: SameEnd = %v at %v, want %v", tc.kind, tc.err, tc.outcome, got, at, tc.same)
		}
	}
	if got, err := DiagnoseEnd(fencedtype.JobEnd{Ref: fencedtype.JobRef{ID: 1, Fence: 3}, Kind: fencedtype.EndFail}, nil, nil); err != fencedtype.ErrNotFound || got.Replayed {
		t.Errorf("an end of a job that is gone = %+v, %v; want ErrNotFound", got, err)
	}
}
