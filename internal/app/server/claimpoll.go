package server

import (
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// Waiting claims share their polls.
//
// A claim that found nothing waits for a wake (an enqueue, retry or resume
// through this server's Client, or any enqueue on a backend that notifies)
// and for polls, which find what no wake announces: jobs enqueued by
// another process on a backend that does not notify (SQLite, MySQL), jobs
// falling due, jobs a limit or a sequence let go. Every waiting claim of
// one queue with the same kinds would find the same jobs, so they share
// one poll schedule (a pollGroup): at each poll one of them claims, for
// all. A poll that finds nothing doubles the interval, from
// Config.PollEvery up to Config.PollMax; one that finds jobs hands the
// next poll at once to the next waiter (more may be due) and starts the
// interval again from PollEvery, as a claim woken by an enqueue that finds
// jobs does. So however many claims wait, a queue costs one claim per
// interval, and an idle one at most one per PollMax.

// pollGroups holds the poll schedule of every queue and kinds that claims
// wait on.
type pollGroups struct {
	every, most time.Duration // the first interval, and the longest

	mu     sync.Mutex
	groups map[pollKey]*pollGroup
	polls  int64 // claims made for a group's turn, ever
}

// pollKey names the claims that find the same jobs: one queue, one set of
// kinds (sorted, as JSON; "" for every kind).
type pollKey struct{ queue, kinds string }

func pollKeyOf(queue string, kinds []string) pollKey {
	if len(kinds) == 0 {
		return pollKey{queue: queue}
	}
	k := slices.Clone(kinds)
	slices.Sort(k)
	ks, _ := json.Marshal(slices.Compact(k))
	return pollKey{queue, string(ks)}
}

// pollGroup is the poll schedule of the waiting claims of one pollKey.
type pollGroup struct {
	key      pollKey
	members  []*pollMember // in the order they began to wait; the first polls
	interval time.Duration // until the next poll after one that found nothing
	timer    *time.Timer   // the next poll; nil while a member holds the turn
	next     uint64        // the number of the next poll timer.fire gives
	out      *pollMember   // the member holding the turn, nil when none
}

// pollMember is one waiting claim in its group: turn receives its turn to
// claim for the group.
type pollMember struct {
	p    *pollGroups
	g    *pollGroup
	turn chan struct{}
}

func newPollGroups(every, most time.Duration) *pollGroups {
	return &pollGroups{every: every, most: max(most, every), groups: map[pollKey]*pollGroup{}}
}

// join adds a waiting claim of queue and kinds to its group, starting the
// group's schedule (first poll after PollEvery) if it is the first. Call
// leave when it no longer waits.
func (p *pollGroups) join(queue string, kinds []string) *pollMember {
	key := pollKeyOf(queue, kinds)
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.groups[key]
	if g == nil {
		g = &pollGroup{key: key, interval: p.every}
		p.groups[key] = g
		p.schedule(g, p.every)
	}
	m := &pollMember{p: p, g: g, turn: make(chan struct{}, 1)}
	g.members = append(g.members, m)
	return m
}

// schedule sets g's next poll d from now. p.mu is held.
func (p *pollGroups) schedule(g *pollGroup, d time.Duration) {
	if g.timer != nil {
		g.timer.Stop()
	}
	g.next++
	n := g.next
	g.timer = time.AfterFunc(d, func() { p.fire(g, n) })
}

// fire gives the turn to g's first member, unless poll n was stopped or
// replaced meanwhile or g has no member left.
func (p *pollGroups) fire(g *pollGroup, n uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if g.timer == nil || g.next != n || len(g.members) == 0 || p.groups[g.key] != g {
		return
	}
	g.timer = nil
	g.out = g.members[0]
	g.out.turn <- struct{}{} // buffered, and empty: nobody else holds the turn
}

// claimed reports the outcome of a claim of m: polled says it was made for
// the group's turn, found that it took jobs.
func (m *pollMember) claimed(polled, found bool) {
	p, g := m.p, m.g
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case polled && g.out == m:
		g.out = nil
		p.polls++
		if found {
			g.interval = p.every
			p.schedule(g, 0) // more may be due: the next waiter polls now
		} else {
			g.interval = min(2*g.interval, p.most)
			p.schedule(g, g.interval)
		}
	case found && g.interval > p.every:
		g.interval = p.every // activity: poll at the first interval again
		if g.timer != nil {
			p.schedule(g, p.every)
		}
	}
}

// leave takes m out of its group. A turn m held and did not use passes at
// once to the next member; the last member's leaving ends the group.
func (m *pollMember) leave() {
	p, g := m.p, m.g
	p.mu.Lock()
	defer p.mu.Unlock()
	g.members = slices.DeleteFunc(g.members, func(x *pollMember) bool { return x == m })
	if len(g.members) == 0 {
		if g.timer != nil {
			g.timer.Stop()
		}
		if p.groups[g.key] == g {
			delete(p.groups, g.key)
		}
		return
	}
	if g.out == m {
		g.out = nil
		p.schedule(g, 0)
	}
}

// interval is the poll interval of the group of queue and kinds now, and
// whether claims wait there (tests).
func (p *pollGroups) interval(queue string, kinds ...string) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.groups[pollKeyOf(queue, kinds)]
	if g == nil {
		return 0, false
	}
	return g.interval, true
}

// pollsMade is how many claims polled for a group, ever (tests).
func (p *pollGroups) pollsMade() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.polls
}
