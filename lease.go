package fenced

import (
	"context"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// Lease is one generation of a named lease as the database decided it.
type Lease = fencedtype.Lease

// leaseRef is the generation l names, as the driver takes it.
func leaseRef(l Lease) driver.LeaseRef {
	return driver.LeaseRef{Name: l.Name, Owner: l.Owner, Fence: l.Fence}
}

// ValidateAcquireLease returns the *InvalidError AcquireLease returns for
// this input before it reaches the database, or nil.
func ValidateAcquireLease(name, owner string, ttl time.Duration) error {
	if err := validName("lease name", name); err != nil {
		return err
	}
	if err := validName("owner", owner); err != nil {
		return err
	}
	return validTTL(ttl)
}

// AcquireLease takes the named lease for ttl by the database clock.
//
// A free lease (never held, released, or expired) is granted with a fence one
// above its last. If owner already holds it unexpired, the same fence is kept
// and the expiry extended, so retrying an acquire after an ambiguous reply
// never mints a second generation. If another owner holds it, the error is a
// *HeldError (errors.Is ErrHeld) naming the holder and its expiry.
func (c *Client) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (*Lease, error) {
	if err := ValidateAcquireLease(name, owner, ttl); err != nil {
		return nil, err
	}
	r, err := c.d.AcquireLease(ctx, driver.AcquireLeaseParams{Name: name, Owner: owner, TTL: ttl})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// ValidateRenewLease returns the *InvalidError RenewLease returns for this
// input before it reaches the database, or nil.
func ValidateRenewLease(l Lease, ttl time.Duration) error {
	if err := validRef(l); err != nil {
		return err
	}
	return validTTL(ttl)
}

// RenewLease extends the generation l to ttl from now by the database clock. It
// succeeds only while l is current: same name, owner and fence, unreleased and
// unexpired. Otherwise it returns a *StaleError whose Reason says why:
// superseded, never granted, wrong owner, released or expired (an expired
// lease must be acquired again, with a new fence), or ErrNotFound if the
// name was never acquired.
func (c *Client) RenewLease(ctx context.Context, l Lease, ttl time.Duration) (*Lease, error) {
	if err := ValidateRenewLease(l, ttl); err != nil {
		return nil, err
	}
	r, err := c.d.RenewLease(ctx, leaseRef(l), ttl)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// ValidateReleaseLease returns the *InvalidError ReleaseLease returns for
// this input before it reaches the database, or nil.
func ValidateReleaseLease(l Lease) error { return validRef(l) }

// ReleaseLease gives up the generation l. The row and its fence stay, so the next
// grant continues the sequence. Releasing a generation that is already
// released, or that expired with no takeover, succeeds; after a takeover it
// returns a *StaleError. The lease returned is the released generation:
// Released is set, and ExpiresAt is when it stopped being held (the release,
// or its earlier expiry).
func (c *Client) ReleaseLease(ctx context.Context, l Lease) (*Lease, error) {
	if err := ValidateReleaseLease(l); err != nil {
		return nil, err
	}
	row, err := c.d.ReleaseLease(ctx, leaseRef(l))
	if err != nil {
		return nil, err
	}
	return row, nil
}

// ValidateGetLease returns the *InvalidError GetLease returns for this
// name before it reaches the database, or nil.
func ValidateGetLease(name string) error { return validName("lease name", name) }

// GetLease reads the named lease; Held says whether it is held now by the
// database clock. ErrNotFound if it was never acquired.
func (c *Client) GetLease(ctx context.Context, name string) (*Lease, error) {
	if err := ValidateGetLease(name); err != nil {
		return nil, err
	}
	r, err := c.d.GetLease(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := c.markAdvanced(ctx, []*Lease{r}); err != nil {
		return nil, err
	}
	return r, nil
}

// IsHolder reports whether l is the current, unexpired generation of its
// lease by the database clock. It is a point-in-time answer for display and
// liveness; protect writes with LeaseTx or the resource store instead.
func (c *Client) IsHolder(ctx context.Context, l Lease) (bool, error) {
	cur, err := c.GetLease(ctx, l.Name)
	if err != nil {
		return false, err
	}
	return cur.Held && cur.Owner == l.Owner && cur.Fence == l.Fence, nil
}

// ListLeases reads every lease, ordered by name.
func (c *Client) ListLeases(ctx context.Context) ([]*Lease, error) {
	ls, err := c.d.ListLeases(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.markAdvanced(ctx, ls); err != nil {
		return nil, err
	}
	return ls, nil
}

// markAdvanced sets Advanced on the released leases whose fence is the fence
// floor, read after them. Every grant is above the floor of its time and the
// floor only rises, so such a fence was set by the last advance: a lease is
// never marked that held its fence. (An advance between the two reads
// raises the floor above every fence read, so none is marked then, one
// advanced earlier included: Advanced can be missed at that moment, never
// set wrongly.)
func (c *Client) markAdvanced(ctx context.Context, ls []*Lease) error {
	if c.caps.floor == nil || len(ls) == 0 {
		return nil
	}
	floor, err := c.caps.floor.FenceFloor(ctx)
	if err != nil {
		return err
	}
	for _, l := range ls {
		l.Advanced = floor > 0 && l.Released && l.Fence == floor
	}
	return nil
}
