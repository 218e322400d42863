package driver

import "github.com/fenced/fenced/fencedtype"

// DiagnoseLease explains why a conditional write on ref changed nothing,
// given the row as read afterwards (nil when there is none): the stored
// fence is above the caller's (superseded) or below it (never granted);
// else the fence is the caller's but its owner is not (wrong owner); else
// the generation was released, or else it expired.
func DiagnoseLease(ref LeaseRef, row *fencedtype.Lease) error {
	if row == nil {
		return fencedtype.ErrNotFound
	}
	e := &fencedtype.StaleError{Kind: fencedtype.StaleLease, Name: ref.Name, Owner: ref.Owner, Fence: ref.Fence, CurrentFence: row.Fence}
	if row.Held {
		e.CurrentOwner = row.Owner
	}
	e.Reason = fenceReason(ref.Fence, row.Fence)
	switch {
	case e.Reason != "": // the fences decided
	case ref.Owner != row.Owner:
		e.Reason = fencedtype.ReasonWrongOwner
	case row.Released:
		e.Reason = fencedtype.ReasonReleased
	default:
		e.Reason = fencedtype.ReasonExpired
	}
	return e
}

// fenceReason is what the fences alone say about a refused write: the
// stored fence is above the caller's (superseded) or below it (never
// granted); "" when they are equal, and something else decided.
func fenceReason(caller, stored int64) fencedtype.StaleReason {
	switch {
	case caller < stored:
		return fencedtype.ReasonSuperseded
	case caller > stored:
		return fencedtype.ReasonNeverGranted
	}
	return ""
}

// HeldBy builds the error for an acquire refused because row is held.
func HeldBy(row *fencedtype.Lease) error {
	return &fencedtype.HeldError{Name: row.Name, Owner: row.Owner, Fence: row.Fence, ExpiresAt: row.ExpiresAt}
}
