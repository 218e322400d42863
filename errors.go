package fenced

import "github.com/fenced/fenced/driver"

// Errors, re-exported from the driver package where they are defined once.
// Match sentinels with errors.Is and typed errors with errors.As.
var (
	// ErrNotFound: the lease, job or resource does not exist. A stale caller
	// never gets it for something that exists.
	ErrNotFound = driver.ErrNotFound
	// ErrInvalid: input rejected before any statement ran; nothing changed.
	ErrInvalid = driver.ErrInvalid
	// ErrStale: a write carried a fence that is no longer current.
	ErrStale = driver.ErrStale
	// ErrHeld: acquire refused because another owner holds the lease.
	ErrHeld = driver.ErrHeld
)

// StaleError carries the caller's fence and what is current now.
type StaleError = driver.StaleError

// HeldError carries the holder and its expiry.
type HeldError = driver.HeldError

// InvalidError names the rejected field and why.
type InvalidError = driver.InvalidError

// StaleReason says why a fence is no longer current.
type StaleReason = driver.StaleReason

// The reasons a fence can be stale.
const (
	ReasonSuperseded = driver.ReasonSuperseded
	ReasonExpired    = driver.ReasonExpired
	ReasonReleased   = driver.ReasonReleased
	ReasonNotRunning = driver.ReasonNotRunning
)
