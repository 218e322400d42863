//go:build fenced_broken_limits

package claimlimit

// A DELIBERATELY BROKEN BUILD, selected only by the build tag
// fenced_broken_limits, which only the chaos suite's checker test uses: a
// limited claim takes no locks and admits every candidate it picked, up to
// the claim's limit, whatever its key's, kind's or queue's limit and its
// sequence (each backend's pre-filter, limitcheck_broken.go, filters
// nothing either). The conformance suite's concurrency-limit and sequence
// tests fail under it, and the chaos keyed checker must report it. Never
// ship a binary built with this tag.

// Admit admits the first limit candidates.
func Admit(cands []Candidate, _ Load, limit int) []int64 {
	var out []int64
	for _, c := range cands[:min(limit, len(cands))] {
		out = append(out, c.ID)
	}
	return out
}

// LockNames names no lock.
func LockNames(string, []Candidate, bool) []string { return nil }
