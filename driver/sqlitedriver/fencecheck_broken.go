//go:build fenced_broken

package sqlitedriver

// A DELIBERATELY BROKEN BUILD, selected only by the build tag fenced_broken,
// which only the chaos suite's checker test uses: an attempt's outcome and
// its job-fenced transaction are guarded by the job's state and lease alone,
// not by the attempt's fence (as a queue that completes by id and state
// does). A worker whose job was recovered and claimed again can then
// complete it and commit its business writes; the chaos checkers must
// report it. Never ship a binary built with this tag.
const (
	endFenceMatch   = `e.end_fence IS NOT NULL`
	guardFenceMatch = `?2 IS NOT NULL`
)
