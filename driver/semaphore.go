package driver

import (
	"context"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

// SemaphoreDriver is the semaphores, a capability a backend implements
// beside its Driver (the SQL backends do; etcd does not): N slots under one
// name, each grant with a fence from one counter per name (docs/design.md
// §4.7). A lease is the N = 1 case, and every rule below is the lease's rule
// applied to one slot.
type SemaphoreDriver interface {
	// AcquireSlot returns the same owner's current grant (unexpired,
	// unreleased) extended to ttl and keeping its fence; else grants the
	// lowest free slot below p.Slots (never granted, released, or expired
	// by the database clock) with the name's next fence; else
	// *fencedtype.HeldError naming the holder whose grant runs out first.
	// The stored number of slots becomes p.Slots. Acquirers of one name
	// are serialized by a lock on the semaphore's row, taken first.
	AcquireSlot(ctx context.Context, p AcquireSlotParams) (*fencedtype.Slot, error)
	// RenewSlot extends an unexpired, unreleased grant whose name, owner
	// and fence match. Otherwise *fencedtype.StaleError or
	// fencedtype.ErrNotFound (diagnosed by DiagnoseSlot).
	RenewSlot(ctx context.Context, ref SlotRef, ttl time.Duration) (*fencedtype.Slot, error)
	// ReleaseSlot marks the grant released; releasing it again succeeds.
	// Otherwise *fencedtype.StaleError or fencedtype.ErrNotFound.
	ReleaseSlot(ctx context.Context, ref SlotRef) (*fencedtype.Slot, error)
	// GetSemaphore reads one semaphore and its holders, with Held decided
	// by the database clock, in one statement.
	GetSemaphore(ctx context.Context, name string) (*fencedtype.Semaphore, error)
	// ListSemaphores reads every semaphore ordered by name.
	ListSemaphores(ctx context.Context) ([]*fencedtype.Semaphore, error)
	// SlotTx runs fn in a transaction that first locks the grant's slot
	// row in share mode (a write transaction on SQLite) and checks owner,
	// fence and expiry, as LeaseTx does for a lease row. While it is open a
	// takeover of that slot blocks.
	SlotTx(ctx context.Context, ref SlotRef, fn func(Tx) error) error
}

// AcquireSlotParams are the inputs of AcquireSlot.
type AcquireSlotParams struct {
	Name  string
	Owner string
	Slots int // N, at least 1
	TTL   time.Duration
}

// SlotRef identifies one grant of a semaphore slot as its holder knows it.
// No slot number is needed: a fence is granted once per name.
type SlotRef struct {
	Name  string
	Owner string
	Fence int64
}

// DiagnoseSlot explains why a conditional write on ref changed nothing, from
// reads made after it, by the rules of DiagnoseLease applied to the slot the
// grant was in:
//
//   - last is the last fence granted under the name; found is false when
//     the semaphore does not exist (fencedtype.ErrNotFound);
//   - grant is the slot row that still carries ref.Fence, nil when none
//     does; it decides as a lease row does: another owner (wrong owner),
//     released, else expired;
//   - without such a row the grant's slot was granted again (or a fence
//     advance ended it), so the caller is superseded when ref.Fence is at
//     most last, and never granted when above it; CurrentFence is last and
//     CurrentOwner the holder of that newest grant, newest, when it is held.
func DiagnoseSlot(ref SlotRef, found bool, last int64, grant, newest *fencedtype.Slot) error {
	if !found {
		return fencedtype.ErrNotFound
	}
	e := &fencedtype.StaleError{Kind: fencedtype.StaleSemaphore, Name: ref.Name, Owner: ref.Owner, Fence: ref.Fence}
	if grant != nil {
		e.CurrentFence = grant.Fence
		if grant.Held {
			e.CurrentOwner = grant.Owner
		}
		switch {
		case grant.Owner != ref.Owner:
			e.Reason = fencedtype.ReasonWrongOwner
		case grant.Released:
			e.Reason = fencedtype.ReasonReleased
		default:
			e.Reason = fencedtype.ReasonExpired
		}
		return e
	}
	e.CurrentFence = last
	if newest != nil && newest.Held {
		e.CurrentOwner = newest.Owner
	}
	e.Reason = fencedtype.ReasonSuperseded
	if ref.Fence > last {
		e.Reason = fencedtype.ReasonNeverGranted
	}
	return e
}

// SlotsHeld builds the error of an acquire refused because every slot is
// held: holders are the grants held below the number of slots, the first
// to run out first.
func SlotsHeld(name string, slots int, holders []*fencedtype.Slot) error {
	e := &fencedtype.HeldError{Name: name, Slots: slots}
	if len(holders) > 0 {
		h := holders[0]
		e.Owner, e.Fence, e.ExpiresAt = h.Owner, h.Fence, h.ExpiresAt
	}
	return e
}
