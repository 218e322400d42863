package server

import (
	"testing"
	"time"
)

// turnWithin waits for m's turn, failing the test past a generous deadline.
func turnWithin(t *testing.T, m *pollMember, what string) {
	t.Helper()
	select {
	case <-m.turn:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: no turn", what)
	}
}

// noTurn fails if m holds a turn now.
func noTurn(t *testing.T, m *pollMember, what string) {
	t.Helper()
	select {
	case <-m.turn:
		t.Fatalf("%s: a turn it should not have", what)
	default:
	}
}

// TestPollGroups: the waiting claims of one queue and kinds take turns to
// poll, one at a time; a poll that finds nothing doubles the interval up to
// the cap, one that finds jobs hands the next turn over at once and starts
// the interval again, and a turn its holder leaves with passes on.
func TestPollGroups(t *testing.T) {
	t.Parallel()
	t.Run("OnePollAtATimeForEveryWaiter", func(t *testing.T) {
		t.Parallel()
		p := newPollGroups(time.Millisecond, 8*time.Millisecond)
		a := p.join("q", nil)
		b := p.join("q", []string{})    // no kinds, as nil: the same group
		c := p.join("q", []string{"k"}) // another group
		defer c.leave()
		turnWithin(t, a, "the first waiter")
		turnWithin(t, c, "the waiter of kind k, in its own group")
		time.Sleep(20 * time.Millisecond) // several intervals: still one turn out
		noTurn(t, b, "the second waiter while the first polls")
		a.claimed(true, false)
		a.leave()
		turnWithin(t, b, "the second waiter once the first left")
		b.leave()
		if _, ok := p.interval("q"); ok {
			t.Error("the group outlived its last waiter")
		}
	})
	t.Run("EmptyPollsBackOffToTheCap", func(t *testing.T) {
		t.Parallel()
		p := newPollGroups(time.Millisecond, 8*time.Millisecond)
		m := p.join("q", nil)
		defer m.leave()
		for _, want := range []time.Duration{2, 4, 8, 8, 8} {
			turnWithin(t, m, "the waiter")
			m.claimed(true, false)
			if got, _ := p.interval("q"); got != want*time.Millisecond {
				t.Fatalf("interval after an empty poll: %s, want %s", got, want*time.Millisecond)
			}
		}
	})
	t.Run("APollThatFindsJobsPassesTheTurnAtOnce", func(t *testing.T) {
		t.Parallel()
		p := newPollGroups(time.Millisecond, time.Hour)
		a, b := p.join("q", nil), p.join("q", nil)
		defer b.leave()
		for range 3 {
			turnWithin(t, a, "the first waiter")
			a.claimed(true, false)
		}
		turnWithin(t, a, "the first waiter")
		a.claimed(true, true) // found jobs: it will answer and leave
		a.leave()
		if got, _ := p.interval("q"); got != time.Millisecond {
			t.Errorf("interval after a poll found jobs: %s, want the first one", got)
		}
		turnWithin(t, b, "the next waiter, at once") // not after the 8 ms it had grown to, nor an hour
	})
	t.Run("AWokenClaimThatFindsJobsStartsTheIntervalAgain", func(t *testing.T) {
		t.Parallel()
		p := newPollGroups(time.Millisecond, time.Hour)
		m := p.join("q", nil)
		defer m.leave()
		for range 5 {
			turnWithin(t, m, "the waiter")
			m.claimed(true, false)
		}
		m.claimed(false, true)
		if got, _ := p.interval("q"); got != time.Millisecond {
			t.Fatalf("interval after a woken claim found jobs: %s, want the first one", got)
		}
		turnWithin(t, m, "the waiter, a millisecond on") // not after 32 ms grown towards an hour
	})
	t.Run("ATurnLeftUnusedPassesOn", func(t *testing.T) {
		t.Parallel()
		p := newPollGroups(time.Millisecond, time.Hour)
		a, b := p.join("q", nil), p.join("q", nil)
		defer b.leave()
		turnWithin(t, a, "the first waiter")
		a.leave() // its client went away before it polled
		turnWithin(t, b, "the second waiter")
	})
}
