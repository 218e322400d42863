//go:build !fenced_broken_limits

package claimlimit

import "slices"

// The enforcing half of the limited claim's decisions; admit_broken.go is
// the deliberately broken build's.

// Admit chooses, among cands in claim order, the jobs a limited claim of at
// most limit jobs starts: a candidate is admitted while its key's running
// attempts plus those admitted before it in this claim stay below the
// key's limit, the queue's and its kind's global limits likewise, and at
// most one job per sequence (its head, unblocked). The caller must have
// read cands and load after taking the locks of LockNames.
func Admit(cands []Candidate, load Load, limit int) []int64 {
	var out []int64
	keys, kinds, seqs := map[string]int{}, map[string]int{}, map[string]bool{}
	for _, c := range cands {
		if len(out) == limit {
			break
		}
		if c.SequenceKey != "" {
			if seqs[c.SequenceKey] || c.Blocked {
				seqs[c.SequenceKey] = true
				continue
			}
			seqs[c.SequenceKey] = true
		}
		if load.QueueGlobal > 0 && load.QueueRunning+len(out) >= load.QueueGlobal {
			break
		}
		if g := load.KindGlobal[c.Kind]; g > 0 && load.KindRunning[c.Kind]+kinds[c.Kind] >= g {
			continue
		}
		if c.ConcurrencyKey != "" && c.KeyLimit > 0 && c.KeyRunning+keys[c.ConcurrencyKey] >= c.KeyLimit {
			continue
		}
		out = append(out, c.ID)
		keys[c.ConcurrencyKey]++
		kinds[c.Kind]++
	}
	return out
}

// LockNames are the names of the locks a limited claim of queue takes
// before it reads the load of its candidates, distinct and sorted: one per
// concurrency key and per sequence key among them and, when the queue has a
// global limit, one for the queue. Every limited claimer takes its locks in
// this order, so two never wait for each other in a cycle.
func LockNames(queue string, cands []Candidate, global bool) []string {
	var names []string
	if global {
		names = append(names, "g\x1f"+queue)
	}
	for _, c := range cands {
		if c.ConcurrencyKey != "" {
			names = append(names, "k\x1f"+queue+"\x1f"+c.ConcurrencyKey)
		}
		if c.SequenceKey != "" {
			names = append(names, "s\x1f"+queue+"\x1f"+c.SequenceKey)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
