//go:build fenced_broken

package mysqldriver

// A DELIBERATELY BROKEN BUILD, selected only by the build tag fenced_broken,
// which only the chaos suite's checker test uses: an attempt's outcome and
// its job-fenced transaction are guarded by the job's state and lease alone,
// not by the attempt's fence (as a queue that completes by id and state
// does). A worker whose job was recovered and claimed again can then
// complete it and commit its business writes; the chaos checkers must
// report it. Never ship a binary built with this tag.
const (
	// endPairsMatch takes the same (id, fence) pairs and holds for every
	// row: no claimed attempt has fence 0.
	endPairsMatch   = `(id, 0) NOT IN (%s)`
	endFenceMatch   = `e.fence IS NOT NULL`
	guardFenceMatch = `? IS NOT NULL`
)
