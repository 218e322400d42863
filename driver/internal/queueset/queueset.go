// Package queueset holds a set of queue names that is safe for concurrent
// use: a driver's hints about a queue's next claim (which way to claim it),
// which are only a matter of speed — every claim path enforces every limit,
// so a stale hint costs a statement, never a wrong claim.
package queueset

import "sync"

// Set is a set of queue names. The zero value is empty and ready.
type Set struct{ m sync.Map }

// Has reports whether queue is in the set.
func (s *Set) Has(queue string) bool { _, ok := s.m.Load(queue); return ok }

// Set puts queue in the set when in, else takes it out.
func (s *Set) Set(queue string, in bool) {
	if in {
		s.m.Store(queue, struct{}{})
	} else {
		s.m.Delete(queue)
	}
}
