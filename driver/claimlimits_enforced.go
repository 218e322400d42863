//go:build !fenced_broken_limits

package driver

// LimitsEnforced is true in every build but the deliberately broken one
// (claimlimits_broken.go), whose JobClaimableSQL filters nothing.
const LimitsEnforced = true
