package server

import (
	"sync"
	"time"
)

// minuteSlots is how many minutes a minuteCounts keeps: an hour and the
// minute going on, and one to spare.
const minuteSlots = 62

// minuteCounts counts events by the minute they happened in, over the
// last hour, in a ring of one slot per minute.
type minuteCounts struct {
	mu    sync.Mutex
	slots [minuteSlots]struct {
		minute int64 // Unix minute the slot counts
		n      int64
	}
}

// add counts one event at at.
func (m *minuteCounts) add(at time.Time) {
	u := at.Unix() / 60
	m.mu.Lock()
	defer m.mu.Unlock()
	s := &m.slots[u%minuteSlots]
	switch {
	case s.minute == u:
		s.n++
	case s.minute < u: // the slot held a minute an hour ago or more
		s.minute, s.n = u, 1
	}
}

// counts returns the counts of the minutes kept, by each minute's start
// (UTC); minutes without events are absent.
func (m *minuteCounts) counts() map[time.Time]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[time.Time]int64{}
	for _, s := range m.slots {
		if s.n > 0 {
			out[time.Unix(s.minute*60, 0).UTC()] = s.n
		}
	}
	return out
}

// StaleMinutes counts the writes this server refused as stale
// (fenced_stale_writes_total) by the minute of the database clock they
// were refused in, over the last hour: the dashboard's chart of them.
// Minutes without any are absent.
func (s *Server) StaleMinutes() map[time.Time]int64 { return s.staleMinutes.counts() }
