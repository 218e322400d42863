//go:build !fenced_broken_limits

package pgdriver

// The limited pick's pre-filter. Read before the locks, it only saves
// picking jobs that cannot be admitted: the admission decides on the load
// read after them. These are constants of their own only so that the
// chaos suite can show its checkers catch a build without them (the build
// tag fenced_broken_limits, see limitcheck_broken.go).
const (
	// sequenceFilterSQL passes a sequenced job only if it is its
	// sequence's head (or the walk did not take every sequence) and its
	// sequence is not blocked.
	sequenceFilterSQL = `(j.sequence_key IS NULL OR (
        (j.id IN (SELECT id FROM sequence_heads WHERE id IS NOT NULL) OR NOT (SELECT yes FROM sequence_heads_all))
        AND NOT ` + sequenceBlockedSQL + `))`
	// keyFilterSQL passes a job whose key is not full.
	keyFilterSQL = notFullSQL
)
