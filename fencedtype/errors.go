package fencedtype

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors; match with errors.Is.
var (
	// ErrNotFound reports that the named lease, job or resource does not exist.
	// A stale caller never gets ErrNotFound for something that exists.
	ErrNotFound = errors.New("not found")
	// ErrInvalid reports input rejected before any statement ran.
	ErrInvalid = errors.New("invalid input")
	// ErrStale matches every *StaleError.
	ErrStale = errors.New("stale fence")
	// ErrHeld matches every *HeldError.
	ErrHeld = errors.New("lease held by another owner")
)

// StaleReason says why a fence is no longer current. Each is decided from
// the row as the refusing transaction (or, where a backend diagnoses after
// the refused statement, the read right after it) found it.
type StaleReason string

// The reasons a write can be stale.
const (
	// ReasonSuperseded: a newer generation was granted: the stored fence is
	// above the caller's (a takeover, a job claimed again, a resource
	// written under a higher fence, or a fence advance).
	ReasonSuperseded StaleReason = "superseded"
	// ReasonExpired: the caller's generation is the stored one, but its
	// lease ran out by the database clock.
	ReasonExpired StaleReason = "expired"
	// ReasonReleased: the caller's generation is the stored one, but it was
	// released.
	ReasonReleased StaleReason = "released"
	// ReasonNotRunning: the job attempt is the stored one but no longer
	// running: it ended, or recovery took it back.
	ReasonNotRunning StaleReason = "not_running"
	// ReasonWrongOwner: the caller's fence is the stored one, but it was
	// granted to another owner (leases only).
	ReasonWrongOwner StaleReason = "wrong_owner"
	// ReasonNeverGranted: the caller's fence is above the stored one, so no
	// grant ever gave it (leases and jobs; a resource accepts any fence not
	// below the stored one).
	ReasonNeverGranted StaleReason = "never_granted"
)

// StaleKind says what a stale fence was the fence of.
type StaleKind string

// The kinds of fence a write can carry.
const (
	StaleLease     StaleKind = "lease"     // a lease generation's fence
	StaleSemaphore StaleKind = "semaphore" // a semaphore slot grant's fence
	StaleJob       StaleKind = "job"       // a job attempt's fence
	StaleResource  StaleKind = "resource"  // a resource write's (or a sqlguard row's) fence
)

// StaleError is returned when a write carries a fence that is no longer
// current. It says what the caller held and what is current now, so the caller
// can tell a takeover from its own lease running out.
type StaleError struct {
	Kind         StaleKind   // StaleLease, StaleSemaphore, StaleJob or StaleResource
	Name         string      // lease or semaphore name, job id or resource key
	Owner        string      // the caller's owner (leases, semaphores); "" for jobs and resources
	Fence        int64       // the caller's fence
	CurrentFence int64       // the fence stored now
	CurrentOwner string      // owner now holding it, "" when nobody holds it
	Reason       StaleReason // why the caller's fence is no longer good
	// DecidedAt is the database clock reading of the read that found the
	// fence stale, when the backend returns one (a job's worker-owned
	// writes do); zero otherwise.
	DecidedAt time.Time
}

// Error says what is wrong in plain words, then what is current:
//
//	stale fence: lease "report" fence 1 is held by "w1", not "w2"
//	stale fence: lease "report" fence 2 was never granted: the current fence is 1 (held by "w1")
func (e *StaleError) Error() string {
	subject := fmt.Sprintf("%s %s", e.Kind, Quote(e.Name))
	if e.Kind == StaleJob {
		subject = "job " + e.Name
	}
	s := fmt.Sprintf("stale fence: %s fence %d ", subject, e.Fence)
	switch e.Reason {
	case ReasonWrongOwner:
		if e.CurrentOwner != "" {
			return s + fmt.Sprintf("is held by %s, not %s", Quote(e.CurrentOwner), Quote(e.Owner))
		}
		return s + fmt.Sprintf("was granted to another owner, not %s; nobody holds it now", Quote(e.Owner))
	case ReasonNeverGranted:
		s += fmt.Sprintf("was never granted: the current fence is %d", e.CurrentFence)
	case ReasonSuperseded:
		if e.Kind == StaleResource {
			return s + fmt.Sprintf("is superseded: the stored value was written with fence %d", e.CurrentFence)
		}
		s += fmt.Sprintf("is superseded: a newer fence %d was granted", e.CurrentFence)
	case ReasonReleased:
		return s + "was released"
	case ReasonExpired:
		if e.Kind == StaleJob {
			return s + "expired: the attempt's lease ran out before this write"
		}
		return s + "expired: its lease ran out before this write"
	case ReasonNotRunning:
		return s + "is no longer running: the attempt ended or was taken back"
	default:
		s += fmt.Sprintf("is %s: the current fence is %d", e.Reason, e.CurrentFence)
	}
	if e.CurrentOwner != "" {
		return s + " (held by " + Quote(e.CurrentOwner) + ")"
	}
	return s + " (nobody holds it now)"
}

// Is makes errors.Is(err, ErrStale) true.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// HeldError is returned by acquire when another owner holds an unexpired
// lease, or when every slot of a semaphore is held by others.
type HeldError struct {
	Name      string
	Owner     string    // the current holder (of a semaphore: the holder whose grant runs out first)
	Fence     int64     // the holder's fence
	ExpiresAt time.Time // when the holder's lease runs out, by the database clock
	// Slots is, for a semaphore, its number of slots, all of them held;
	// 0 for a lease.
	Slots int
}

func (e *HeldError) Error() string {
	if e.Slots > 0 {
		return fmt.Sprintf("semaphore %s has all %d slots held; the first to run out is %s's, at %s",
			Quote(e.Name), e.Slots, Quote(e.Owner), FormatTime(e.ExpiresAt))
	}
	return fmt.Sprintf("lease %s is held by %s until %s", Quote(e.Name), Quote(e.Owner), FormatTime(e.ExpiresAt))
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// InvalidError describes input rejected at the boundary.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string { return fmt.Sprintf("invalid %s: %s", e.Field, e.Reason) }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Invalid builds an *InvalidError.
func Invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// ErrJobFinished is returned by a cancel of a job that already finished.
var ErrJobFinished = errors.New("job already finished")

// ErrJobNotFinished is returned by a retry of a job that has not finished.
var ErrJobNotFinished = errors.New("job is not failed or cancelled")

// JobStateError is returned when a job is not in a state the operation
// accepts (cancel of a finished job, retry of an unfinished one). It matches
// ErrJobFinished or ErrJobNotFinished with errors.Is.
type JobStateError struct {
	Op    string   // "cancel" or "retry"
	ID    int64    // the job
	State JobState // the state it was found in
}

func (e *JobStateError) Error() string {
	if e.Op == "cancel" {
		return fmt.Sprintf("cannot cancel job %d: it already finished (%s)", e.ID, e.State)
	}
	return fmt.Sprintf("cannot %s job %d: it is %s, not failed or cancelled", e.Op, e.ID, e.State)
}

// Is matches ErrJobFinished for a refused cancel and ErrJobNotFinished for a
// refused retry.
func (e *JobStateError) Is(target error) bool {
	if e.Op == "cancel" {
		return target == ErrJobFinished
	}
	return target == ErrJobNotFinished
}

// ErrNotMigrated matches every *NotMigratedError.
var ErrNotMigrated = errors.New("database not migrated")

// NotMigratedError reports a database whose fenced schema is missing or
// behind: never migrated, or not since the release that added a table. A
// statement that found one of fenced's tables missing returns it (each
// backend recognises its own error for that: PostgreSQL's undefined_table,
// MySQL's 1146, SQLite's "no such table"), and so does a Worker's Start,
// and a Maintainer's, on a database with migrations pending. Run
// "fenced migrate", or Client.Migrate, and try again.
type NotMigratedError struct {
	Backend Dialect // DialectPostgres, DialectMySQL or DialectSQLite
	Table   string  // the missing table a statement named; "" when Pending says it
	Pending []int   // the migrations not applied, when they were read
	Err     error   // the database's error, when a statement failed
}

func (e *NotMigratedError) Error() string {
	what := "its fenced schema is behind"
	switch {
	case e.Table != "":
		what = "table " + e.Table + " does not exist"
	case len(e.Pending) > 0 && e.Pending[0] == 1:
		what = "it has never been migrated"
	case len(e.Pending) == 1:
		what = fmt.Sprintf("migration %d is pending", e.Pending[0])
	case len(e.Pending) > 1:
		vs := make([]string, len(e.Pending))
		for i, v := range e.Pending {
			vs[i] = strconv.Itoa(v)
		}
		what = "migrations " + strings.Join(vs, ", ") + " are pending"
	}
	return fmt.Sprintf("the %s database is not migrated: %s (run \"fenced migrate\", or Client.Migrate)", e.Backend, what)
}

// Unwrap returns the database's error.
func (e *NotMigratedError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNotMigrated) true.
func (e *NotMigratedError) Is(target error) bool { return target == ErrNotMigrated }

// ErrUnknownOutcome matches every *UnknownOutcomeError.
var ErrUnknownOutcome = errors.New("outcome unknown: the connection failed after the call was sent")

// UnknownOutcomeError is returned when the connection to the database failed
// after a call was sent (a failover, a crash, a network cut): a write may or
// may not have committed; it is neither a success nor stale. The fence
// rules make the retries that matter safe: acquiring again by the same
// owner keeps the fence, releasing twice succeeds, a resource write with an
// operation id replays its first outcome. A read may simply be made again.
type UnknownOutcomeError struct {
	Err error // the connection's error
}

func (e *UnknownOutcomeError) Error() string { return "outcome unknown: " + e.Err.Error() }

// Unwrap returns the connection's error.
func (e *UnknownOutcomeError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnknownOutcome) true.
func (e *UnknownOutcomeError) Is(target error) bool { return target == ErrUnknownOutcome }

// ErrUniqueConflict matches every *UniqueConflictError.
var ErrUniqueConflict = errors.New("unique job conflict")

// UniqueConflictError is returned when a state change would put a unique
// job back into one of its unique states while another job holds its
// unique slot: a retry of a failed or cancelled job whose unique states
// leave out failed or cancelled, after a newer job of the same kind, args
// and window was enqueued. Nothing changed. It matches ErrUniqueConflict.
type UniqueConflictError struct {
	Op         string // "retry"
	ID         int64  // the job refused
	ExistingID int64  // the job holding the slot; 0 when it left it since
}

func (e *UniqueConflictError) Error() string {
	if e.ExistingID == 0 {
		return fmt.Sprintf("cannot %s job %d: another job holds its unique slot", e.Op, e.ID)
	}
	return fmt.Sprintf("cannot %s job %d: job %d holds its unique slot (same unique key and window, in one of its unique states)",
		e.Op, e.ID, e.ExistingID)
}

// Is matches ErrUniqueConflict.
func (e *UniqueConflictError) Is(target error) bool { return target == ErrUniqueConflict }
