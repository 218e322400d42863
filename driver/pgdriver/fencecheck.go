//go:build !fenced_broken

package pgdriver

// The fence conditions of the statements a worker's attempt writes through:
// its outcome (jobFinishSQL) and its job-fenced transaction's guard
// (jobGuardSQL). They are constants of their own only so that the chaos
// suite can show its checkers catch a build without them (the build tag
// fenced_broken, see fencecheck_broken.go); no runtime setting changes them.
const (
	// finishReportedFence is the fence jobFinishSQL reports an ended
	// attempt under, which the driver matches against the caller's.
	finishReportedFence = `fence`
	finishFenceMatch    = `j.fence = e.fence`
	guardFenceMatch     = `j.fence = $2`
)
