package fenced

import "github.com/fenced/fenced/fencedtype"

// Errors, re-exported from the driver package where they are defined once.
// Match sentinels with errors.Is and typed errors with errors.As.
var (
	// ErrNotFound: the lease, job or resource does not exist. A stale caller
	// never gets it for something that exists.
	ErrNotFound = fencedtype.ErrNotFound
	// ErrInvalid: input rejected before any statement ran; nothing changed.
	ErrInvalid = fencedtype.ErrInvalid
	// ErrStale: a write carried a fence that is no longer current.
	ErrStale = fencedtype.ErrStale
	// ErrHeld: acquire refused because another owner holds the lease.
	ErrHeld = fencedtype.ErrHeld
)

// StaleError carries the caller's fence and what is current now.
type StaleError = fencedtype.StaleError

// HeldError carries the holder and its expiry.
type HeldError = fencedtype.HeldError

// InvalidError names the rejected field and why.
type InvalidError = fencedtype.InvalidError

// ConnectError says the database could not be reached or opened: the
// backend, where, and the cause (Open returns it).
type ConnectError = fencedtype.ConnectError

// StaleReason says why a fence is no longer current.
type StaleReason = fencedtype.StaleReason

// The reasons a fence can be stale.
const (
	ReasonSuperseded   = fencedtype.ReasonSuperseded
	ReasonExpired      = fencedtype.ReasonExpired
	ReasonReleased     = fencedtype.ReasonReleased
	ReasonNotRunning   = fencedtype.ReasonNotRunning
	ReasonWrongOwner   = fencedtype.ReasonWrongOwner
	ReasonNeverGranted = fencedtype.ReasonNeverGranted
)

// StaleKind says what a stale fence was the fence of.
type StaleKind = fencedtype.StaleKind

// The kinds of fence a write can carry.
const (
	StaleLease     = fencedtype.StaleLease
	StaleSemaphore = fencedtype.StaleSemaphore
	StaleJob       = fencedtype.StaleJob
	StaleResource  = fencedtype.StaleResource
)

// ErrNotMigrated matches every *NotMigratedError: the database's fenced
// schema is missing or behind; run "fenced migrate" or Client.Migrate.
var ErrNotMigrated = fencedtype.ErrNotMigrated

// NotMigratedError names the missing table, or the pending migrations.
type NotMigratedError = fencedtype.NotMigratedError

// ErrUnknownOutcome matches every *UnknownOutcomeError: the connection failed
// after the call was sent, so a write may or may not have committed.
var ErrUnknownOutcome = fencedtype.ErrUnknownOutcome

// UnknownOutcomeError wraps the connection's error of a call whose outcome
// is unknown (see fencedtype.UnknownOutcomeError).
type UnknownOutcomeError = fencedtype.UnknownOutcomeError
