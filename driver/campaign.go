package driver

import (
	"context"
	"errors"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

// CampaignDriver is the leader-election half of a Driver: a lease acquired
// by campaigners, who take turns (docs/design.md §4.6). A campaigner the
// lease refused is recorded as waiting for it, until its record lapses (by
// the database clock), it wins the lease, or it withdraws; and the lease's
// last holder does not win it back while another campaigner waits. The
// records order nothing but who may win a free lease: every grant is still
// AcquireLease's, fence and all.
type CampaignDriver interface {
	// CampaignLease is AcquireLease for a campaigner, with one more
	// refusal: a free lease whose last holder is p.Owner (it released the
	// lease, or let it expire, or a fence advance ended it) is refused
	// with ErrWaitersFirst while the record of another owner waiting for
	// it lasts. A grant deletes p.Owner's own record, and the lapsed
	// records of the name. A refusal (a *fencedtype.HeldError or
	// ErrWaitersFirst) records p.Owner as waiting, for p.Wait from the
	// refusal, as AddLeaseWaiter does.
	CampaignLease(ctx context.Context, p CampaignLeaseParams) (*fencedtype.Lease, error)
	// AddLeaseWaiter records w.Owner as waiting for the lease w.Name
	// until w.For from now by the database clock, replacing its record if
	// it has one. The lease need not exist, nor be held.
	AddLeaseWaiter(ctx context.Context, w LeaseWaiter) error
	// RemoveLeaseWaiter deletes owner's record of waiting for the lease
	// name, if it has one.
	RemoveLeaseWaiter(ctx context.Context, name, owner string) error
}

// CampaignLeaseParams are the inputs of CampaignLease.
type CampaignLeaseParams struct {
	AcquireLeaseParams
	// Wait is how long the record of a refused campaigner lasts.
	Wait time.Duration
}

// LeaseWaiter is one campaigner's record of waiting for a lease.
type LeaseWaiter struct {
	Name  string
	Owner string
	For   time.Duration // how long the record lasts from now
}

// ErrWaitersFirst is CampaignLease's refusal of a free lease to its last
// holder while another campaigner waits for it.
var ErrWaitersFirst = errors.New("another campaigner waits for the lease its last holder would take back")
