package driver

// DiagnoseLease explains why a conditional write on ref changed nothing,
// given the row as read afterwards (nil when there is none).
func DiagnoseLease(ref LeaseRef, row *LeaseRow) error {
	if row == nil {
		return ErrNotFound
	}
	e := &StaleError{Kind: "lease", Name: ref.Name, Fence: ref.Fence, CurrentFence: row.Fence}
	if row.Held {
		e.CurrentOwner = row.Owner
	}
	switch {
	case row.Fence != ref.Fence || row.Owner != ref.Owner:
		e.Reason = ReasonSuperseded
	case row.Released:
		e.Reason = ReasonReleased
	default:
		e.Reason = ReasonExpired
	}
	return e
}

// HeldBy builds the error for an acquire refused because row is held.
func HeldBy(row *LeaseRow) error {
	return &HeldError{Name: row.Name, Owner: row.Owner, Fence: row.Fence, ExpiresAt: row.ExpiresAt}
}
