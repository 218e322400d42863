//go:build !fenced_broken_limits

package driver

// enforceLimits is true in every build but the deliberately broken one
// (claimlimits_broken.go).
const enforceLimits = true
