//go:build fenced_broken_limits

package mysqldriver

// A DELIBERATELY BROKEN BUILD, selected only by the build tag
// fenced_broken_limits (see driver/internal/claimlimit/admit_broken.go):
// the limited pick filters nothing, with the full keys or without them.
// Never ship a binary built with this tag.
const (
	claimableSQL       = `1 = 1`
	claimableNoFullSQL = `1 = 1`
)
