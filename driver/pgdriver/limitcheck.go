//go:build !fenced_broken_limits

package pgdriver

// The limited pick's pre-filter. Read before the locks, it only saves
// picking jobs that cannot be admitted: the admission decides on the load
// read after them. These are constants of their own only so that the
// chaos suite can show its checkers catch a build without them (the build
// tag fenced_broken_limits, see limitcheck_broken.go).
const (
	// sequenceFilterSQL passes a sequenced job only if its sequence is
	// not blocked: no job of it runs, and none before it can block it.
	// The pick reads no held job (jobhold.go), so the jobs it tests are
	// their sequences' heads but for a hold a release has not lifted yet.
	sequenceFilterSQL = `(j.sequence_key IS NULL OR NOT ` + sequenceBlockedSQL + `)`
	// keyFilterSQL passes a job whose key is not full.
	keyFilterSQL = notFullSQL
)
