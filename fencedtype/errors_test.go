package fencedtype

import (
	"errors"
	"testing"
)

// TestStaleErrorSaysTheCause: each reason reads as what is wrong, never as
// "superseded" for a fence that is current or was never granted.
func TestStaleErrorSaysTheCause(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  StaleError
		want string
	}{
		{StaleError{Kind: "lease", Name: "report", Owner: "w2", Fence: 1, CurrentFence: 1, CurrentOwner: "w1", Reason: ReasonWrongOwner},
			`stale fence: lease "report" fence 1 is held by "w1", not "w2"`},
		{StaleError{Kind: "lease", Name: "report", Owner: "w2", Fence: 1, CurrentFence: 1, Reason: ReasonWrongOwner},
			`stale fence: lease "report" fence 1 was granted to another owner, not "w2"; nobody holds it now`},
		{StaleError{Kind: "lease", Name: "report", Owner: "w1", Fence: 2, CurrentFence: 1, CurrentOwner: "w1", Reason: ReasonNeverGranted},
			`stale fence: lease "report" fence 2 was never granted: the current fence is 1 (held by "w1")`},
		{StaleError{Kind: "lease", Name: "report", Owner: "w1", Fence: 1, CurrentFence: 2, CurrentOwner: "w2", Reason: ReasonSuperseded},
			`stale fence: lease "report" fence 1 is superseded: a newer fence 2 was granted (held by "w2")`},
		{StaleError{Kind: "lease", Name: "report", Owner: "w1", Fence: 1, CurrentFence: 101, Reason: ReasonSuperseded},
			`stale fence: lease "report" fence 1 is superseded: a newer fence 101 was granted (nobody holds it now)`},
		{StaleError{Kind: "lease", Name: "report", Owner: "w1", Fence: 1, CurrentFence: 1, Reason: ReasonReleased},
			`stale fence: lease "report" fence 1 was released`},
		{StaleError{Kind: "lease", Name: "report", Owner: "w1", Fence: 1, CurrentFence: 1, Reason: ReasonExpired},
			`stale fence: lease "report" fence 1 expired: its lease ran out before this write`},
		{StaleError{Kind: "job", Name: "12", Fence: 3, CurrentFence: 3, Reason: ReasonExpired},
			`stale fence: job 12 fence 3 expired: the attempt's lease ran out before this write`},
		{StaleError{Kind: "job", Name: "12", Fence: 3, CurrentFence: 3, Reason: ReasonNotRunning},
			`stale fence: job 12 fence 3 is no longer running: the attempt ended or was taken back`},
		{StaleError{Kind: "job", Name: "12", Fence: 3, CurrentFence: 4, CurrentOwner: "B", Reason: ReasonSuperseded},
			`stale fence: job 12 fence 3 is superseded: a newer fence 4 was granted (held by "B")`},
		{StaleError{Kind: "job", Name: "12", Fence: 5, CurrentFence: 4, CurrentOwner: "B", Reason: ReasonNeverGranted},
			`stale fence: job 12 fence 5 was never granted: the current fence is 4 (held by "B")`},
		{StaleError{Kind: "resource", Name: "r", Fence: 1, CurrentFence: 2, Reason: ReasonSuperseded},
			`stale fence: resource "r" fence 1 is superseded: the stored value was written with fence 2`},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.err.Reason, got, c.want)
		}
		if !errors.Is(&c.err, ErrStale) {
			t.Errorf("%s does not match ErrStale", c.err.Reason)
		}
	}
}

// TestErrorsWriteNamesOneWay: a stale and a held error write a name as
// Quote does, so a decomposed é, a filler or a zero-width space in a lease
// name or an owner looks different from its look-alike in both messages.
func TestErrorsWriteNamesOneWay(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want string
	}{
		{&StaleError{Kind: "lease", Name: "cafe\u0301", Owner: "w\u3164", Fence: 1, CurrentFence: 1, CurrentOwner: "a\u200bb", Reason: ReasonWrongOwner},
			`stale fence: lease "cafe\u0301" fence 1 is held by "a\u200bb", not "w\u3164"`},
		{&StaleError{Kind: "lease", Name: "cafe\u0301", Owner: "w\u3164", Fence: 1, CurrentFence: 1, Reason: ReasonWrongOwner},
			`stale fence: lease "cafe\u0301" fence 1 was granted to another owner, not "w\u3164"; nobody holds it now`},
		{&StaleError{Kind: "resource", Name: "k\u0301", Fence: 1, CurrentFence: 2, CurrentOwner: "o\u3164", Reason: ReasonNeverGranted},
			`stale fence: resource "k\u0301" fence 1 was never granted: the current fence is 2 (held by "o\u3164")`},
		{&HeldError{Name: "cafe\u0301", Owner: "w\u3164"},
			`lease "cafe\u0301" is held by "w\u3164" until 0001-01-01T00:00:00.000000Z`},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("\n got %s\nwant %s", got, c.want)
		}
	}
}
