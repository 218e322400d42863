//go:build !fenced_broken

package sqlitedriver

// The fence conditions of the statements a worker's attempt writes through:
// its outcome (endJobsSQL) and its job-fenced transaction's guard
// (jobGuardSQL). They are constants of their own only so that the chaos
// suite can show its checkers catch a build without them (the build tag
// fenced_broken, see fencecheck_broken.go); no runtime setting changes
// them.
const (
	endFenceMatch   = `fenced_jobs.fence = e.end_fence`
	guardFenceMatch = `fence = ?2`
)
