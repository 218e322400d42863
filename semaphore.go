package fenced

import (
	"context"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// Slot is one grant of a slot of a named semaphore as the database decided
// it. Its fence is strictly increasing across every grant of the name.
type Slot = fencedtype.Slot

// Semaphore is a named semaphore with its current holders.
type Semaphore = fencedtype.Semaphore

// MaxSlots is the largest number of slots a semaphore may have.
const MaxSlots = 1000

// slotRef is the grant s names, as the driver takes it.
func slotRef(s Slot) driver.SlotRef {
	return driver.SlotRef{Name: s.Name, Owner: s.Owner, Fence: s.Fence}
}

// ValidateAcquireSlot returns the *InvalidError AcquireSlot returns for this
// input before it reaches the database, or nil.
func ValidateAcquireSlot(name, owner string, slots int, ttl time.Duration) error {
	if err := validName("semaphore name", name); err != nil {
		return err
	}
	if err := validName("owner", owner); err != nil {
		return err
	}
	if err := validSlots(slots); err != nil {
		return err
	}
	return validTTL(ttl)
}

// AcquireSlot takes one of the slots slots of the named semaphore for ttl by
// the database clock (docs/design.md §4.7). A lease is the case slots = 1,
// and the rules are the lease's, per slot:
//
//   - if owner already holds a slot of the name, unexpired and unreleased,
//     that grant continues: the same slot and fence, the expiry extended,
//     so retrying an acquire after an ambiguous reply never takes a second
//     slot;
//   - else the lowest free slot below slots (never granted, released, or
//     expired) is granted with the name's next fence: one counter per name,
//     so fences are strictly increasing across all its slots;
//   - else every slot is held and the error is a *HeldError (errors.Is
//     ErrHeld) naming the holder whose grant runs out first.
//
// The semaphore's number of slots becomes slots: the last acquire sets it.
// A grant is only ever made below it; grants at slots a larger number
// allowed continue until they end, so after a semaphore is made smaller its
// holders may outnumber the new number until they release or expire. All
// acquirers of a name should pass the same number.
func (c *Client) AcquireSlot(ctx context.Context, name, owner string, slots int, ttl time.Duration) (*Slot, error) {
	if err := ValidateAcquireSlot(name, owner, slots, ttl); err != nil {
		return nil, err
	}
	sd, err := c.semaphoreDriver()
	if err != nil {
		return nil, err
	}
	return sd.AcquireSlot(ctx, driver.AcquireSlotParams{Name: name, Owner: owner, Slots: slots, TTL: ttl})
}

// ValidateRenewSlot returns the *InvalidError RenewSlot returns for this
// input before it reaches the database, or nil.
func ValidateRenewSlot(s Slot, ttl time.Duration) error {
	if err := validSlotRef(s); err != nil {
		return err
	}
	return validTTL(ttl)
}

// RenewSlot extends the grant s to ttl from now by the database clock. It
// succeeds only while s is current: same name, owner and fence, unreleased
// and unexpired. Otherwise it returns a *StaleError (Kind "semaphore")
// whose Reason says why, as RenewLease does: superseded (the slot was
// granted again, or a fence advance ended it), never granted, wrong owner,
// released or expired; or ErrNotFound if the name was never acquired.
func (c *Client) RenewSlot(ctx context.Context, s Slot, ttl time.Duration) (*Slot, error) {
	if err := ValidateRenewSlot(s, ttl); err != nil {
		return nil, err
	}
	sd, err := c.semaphoreDriver()
	if err != nil {
		return nil, err
	}
	return sd.RenewSlot(ctx, slotRef(s), ttl)
}

// ValidateReleaseSlot returns the *InvalidError ReleaseSlot returns for this
// input before it reaches the database, or nil.
func ValidateReleaseSlot(s Slot) error { return validSlotRef(s) }

// ReleaseSlot gives up the grant s, freeing its slot. Releasing a grant
// that is already released, or that expired with no takeover of its slot,
// succeeds; after a takeover it returns a *StaleError. The slot returned is
// the released grant: Released is set, and ExpiresAt is when it stopped
// being held.
func (c *Client) ReleaseSlot(ctx context.Context, s Slot) (*Slot, error) {
	if err := ValidateReleaseSlot(s); err != nil {
		return nil, err
	}
	sd, err := c.semaphoreDriver()
	if err != nil {
		return nil, err
	}
	return sd.ReleaseSlot(ctx, slotRef(s))
}

// ValidateGetSemaphore returns the *InvalidError GetSemaphore returns for
// this name before it reaches the database, or nil.
func ValidateGetSemaphore(name string) error { return validName("semaphore name", name) }

// GetSemaphore reads the named semaphore with the grants held now by the
// database clock, in one statement; ErrNotFound if it was never acquired.
// It is a point-in-time answer for display and liveness; protect writes
// with SlotTx or the resource store.
func (c *Client) GetSemaphore(ctx context.Context, name string) (*Semaphore, error) {
	if err := ValidateGetSemaphore(name); err != nil {
		return nil, err
	}
	sd, err := c.semaphoreDriver()
	if err != nil {
		return nil, err
	}
	return sd.GetSemaphore(ctx, name)
}

// ListSemaphores reads every semaphore with its holders, ordered by name.
func (c *Client) ListSemaphores(ctx context.Context) ([]*Semaphore, error) {
	sd, err := c.semaphoreDriver()
	if err != nil {
		return nil, err
	}
	return sd.ListSemaphores(ctx)
}

// SlotTx runs fn in a transaction that commits only under the grant s, as
// LeaseTx does under a lease generation: it first locks the slot's row in
// share mode (on SQLite it is a write transaction) and checks owner, fence
// and expiry by the database clock. If s is no longer current, fn is not
// called and a *StaleError is returned. While the transaction is open a
// takeover of that slot waits for it. Grants of the name's other slots wait
// too on SQLite (one writer) and on MySQL under REPEATABLE READ (docs/design.md
// §10), not on PostgreSQL or under READ COMMITTED. If fn returns an error
// the transaction rolls back and the error is returned. Keep fn short.
func (c *Client) SlotTx(ctx context.Context, s Slot, fn func(Tx) error) error {
	if err := validSlotRef(s); err != nil {
		return err
	}
	sd, err := c.semaphoreDriver()
	if err != nil {
		return err
	}
	return sd.SlotTx(ctx, slotRef(s), fn)
}

func validSlots(n int) error {
	if n < 1 || n > MaxSlots {
		return fencedtype.Invalid("slots", "%d is outside 1 to %d", n, MaxSlots)
	}
	return nil
}

// validSlotRef checks the identity of a slot grant.
func validSlotRef(s Slot) error {
	if err := validName("semaphore name", s.Name); err != nil {
		return err
	}
	if err := validName("owner", s.Owner); err != nil {
		return err
	}
	return validFence(s.Fence)
}
