//go:build !fenced_broken

package mysqldriver

// The fence conditions of the statements a worker's attempt writes through:
// its outcome (endJobsPickSQL, endJobsSQL, endCompletesSQL) and its
// job-fenced transaction's guard (jobGuardSQL). They are constants of their
// own only so that the chaos suite can show its checkers catch a build
// without them (the build tag fenced_broken, see fencecheck_broken.go); no
// runtime setting changes them.
const (
	// endPairsMatch takes the ends' (id, fence) pairs, (?, ?), ….
	endPairsMatch   = `(id, fence) IN (%s)`
	endFenceMatch   = `j.fence = e.fence`
	guardFenceMatch = `fence = ?`
)
