package driver

import "github.com/fenced/fenced/fencedtype"

// DiagnoseLease explains why a conditional write on ref changed nothing,
// given the row as read afterwards (nil when there is none).
func DiagnoseLease(ref LeaseRef, row *fencedtype.Lease) error {
	if row == nil {
		return fencedtype.ErrNotFound
	}
	e := &fencedtype.StaleError{Kind: "lease", Name: ref.Name, Fence: ref.Fence, CurrentFence: row.Fence}
	if row.Held {
		e.CurrentOwner = row.Owner
	}
	switch {
	case row.Fence != ref.Fence || row.Owner != ref.Owner:
		e.Reason = fencedtype.ReasonSuperseded
	case row.Released:
		e.Reason = fencedtype.ReasonReleased
	default:
		e.Reason = fencedtype.ReasonExpired
	}
	return e
}

// HeldBy builds the error for an acquire refused because row is held.
func HeldBy(row *fencedtype.Lease) error {
	return &fencedtype.HeldError{Name: row.Name, Owner: row.Owner, Fence: row.Fence, ExpiresAt: row.ExpiresAt}
}
