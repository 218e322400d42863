// Package claimlimit is the Go side of the limited claim, which every SQL
// backend runs when a claim meets concurrency keys, sequence keys or a
// queue's global limit (docs/design.md §6.10 for the rules, §10 "The
// limited claim" for the rounds, the caches and the measurements):
//
//  1. pick up to Window(limit) eligible queued jobs in claim order that the
//     backend's pre-filter says can run, and lock them (skipping rows other
//     claimers hold);
//  2. take the locks of LockNames in their order, serializing with every
//     other limited claimer of the same keys;
//  3. read each candidate's load afresh, in a new statement after the locks
//     (a snapshot of its own): its key's limit by the backend's one
//     statement of the limit rule, its key's running attempts, whether its
//     sequence is blocked, and the queue's global limits and running jobs;
//  4. admit with Admit, start the admitted and commit before the locks are
//     released, so the next claimer of those keys counts them.
//
// Claim runs such rounds until the claim has what it wants. The SQL of each
// step is the backend's own; what is decided in Go is decided here, once.
package claimlimit

import (
	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/reads"
	"github.com/fenced/fenced/fencedtype"
)

// Candidate is a locked candidate of a limited claim as read after the
// claimer's locks.
type Candidate struct {
	ID             int64
	Kind           string
	ConcurrencyKey string // "" for none
	SequenceKey    string // "" for none
	KeyLimit       int    // the limit that applies to the job's key; 0 none
	KeyRunning     int    // running attempts of the key
	Blocked        bool   // its sequence is blocked
}

// ScanCandidate scans a row of a backend's load read: id, kind,
// concurrency key, sequence key (empty for none), the key's limit (0
// none), the key's running attempts, and 1 when its sequence is blocked.
func ScanCandidate(r driver.Row) (Candidate, error) {
	var c Candidate
	var blocked int
	err := r.Scan(&c.ID, &c.Kind, &c.ConcurrencyKey, &c.SequenceKey, &c.KeyLimit, &c.KeyRunning, &blocked)
	c.Blocked = blocked != 0
	return c, err
}

// Load is what a limited claim reads of its queue: the global limits (0
// none) and the running jobs they bound.
type Load struct {
	QueueGlobal  int
	QueueRunning int
	KindGlobal   map[string]int
	KindRunning  map[string]int
}

// AddGlobal records a global limit of the queue (kind "") or of a kind.
func (l *Load) AddGlobal(kind string, limit int) {
	if kind == "" {
		l.QueueGlobal = limit
		return
	}
	if l.KindGlobal == nil {
		l.KindGlobal = map[string]int{}
	}
	l.KindGlobal[kind] = limit
}

// AddRunning records n running jobs of kind in the queue.
func (l *Load) AddRunning(kind string, n int) {
	if l.KindRunning == nil {
		l.KindRunning = map[string]int{}
	}
	l.KindRunning[kind] += n
	l.QueueRunning += n
}

// HasGlobal reports whether the queue has a global limit of any scope.
func (l *Load) HasGlobal() bool { return l.QueueGlobal > 0 || len(l.KindGlobal) > 0 }

// Window is how many candidates a round picks for limit jobs: a few more
// than limit, since some of a key's candidates may be over its limit. The
// rounds of Claim reach past a window's repeated keys.
func Window(limit int) int { return limit + 16 }

// Rounds bounds the rounds of one claim.
const Rounds = 4

// Claim claims up to want jobs in rounds: round claims up to limit jobs in
// one transaction of its own, picking Window(limit) candidates, and
// returns the jobs it started and how many candidates it picked. Another
// round follows while the last one picked a whole window and started some
// of it, but the claim has fewer than want: the keys it filled are running
// now, and the next pick passes over them. An error after a round started
// jobs ends the claim with those jobs (they are committed: the caller's).
// The jobs come back in claim order.
func Claim(want int, round func(limit int) ([]*fencedtype.Job, int, error)) ([]*fencedtype.Job, error) {
	var jobs []*fencedtype.Job
	for r := 1; ; r++ {
		limit := want - len(jobs)
		got, picked, err := round(limit)
		if err != nil {
			if len(jobs) > 0 {
				break
			}
			return nil, err
		}
		jobs = append(jobs, got...)
		if r == Rounds || len(got) == 0 || len(jobs) >= want || picked < Window(limit) {
			break
		}
	}
	reads.SortClaimed(jobs)
	return jobs, nil
}
