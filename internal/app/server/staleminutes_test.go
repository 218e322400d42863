package server

import (
	"testing"
	"time"
)

// TestMinuteCounts: events count in their minute; a slot an hour old is
// reused for the new minute, not added to; an event older than its slot's
// minute is dropped.
func TestMinuteCounts(t *testing.T) {
	var m minuteCounts
	t0 := time.Date(2026, 12, 2, 10, 0, 30, 0, time.UTC)
	m.add(t0)
	m.add(t0.Add(10 * time.Second))
	m.add(t0.Add(time.Minute))
	got := m.counts()
	if len(got) != 2 || got[t0.Truncate(time.Minute)] != 2 || got[t0.Truncate(time.Minute).Add(time.Minute)] != 1 {
		t.Fatalf("counts = %v", got)
	}
	later := t0.Add(minuteSlots * time.Minute) // the same slot as t0
	m.add(later)
	m.add(t0) // older than its slot's minute now
	got = m.counts()
	if len(got) != 2 || got[later.Truncate(time.Minute)] != 1 || got[t0.Truncate(time.Minute)] != 0 {
		t.Fatalf("after a lap: counts = %v", got)
	}
}
