package pgdriver

import (
	"context"
	"errors"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
)

// campaignLeaseSQL is acquireLeaseSQL with the campaigner's refusal: a
// free lease is not granted to its last holder while another owner's
// record of waiting for it lasts. The records are read in the statement's
// snapshot: a campaigner that starts waiting while the statement runs is
// waiting from after the grant. A grant deletes the owner's own record and
// the lapsed ones of the name.
const campaignLeaseSQL = `
WITH granted AS (` + leaseGrant + `
WHERE (l.released OR l.expires_at <= clock_timestamp() OR l.owner = EXCLUDED.owner)
  AND NOT (l.owner = EXCLUDED.owner AND (l.released OR l.expires_at <= clock_timestamp()) AND EXISTS (
      SELECT 1 FROM fenced_lease_waiters w
      WHERE w.name = l.name AND w.owner <> l.owner AND w.expires_at > clock_timestamp()))` + leaseGranted + `
), pruned AS (
    DELETE FROM fenced_lease_waiters w
    WHERE w.name = $1 AND (w.owner = $2 OR w.expires_at <= clock_timestamp()) AND EXISTS (SELECT 1 FROM granted)
)
SELECT * FROM granted`

// addLeaseWaiterSQL records owner as waiting for the lease until $3
// microseconds from now, replacing the record it had.
const addLeaseWaiterSQL = `
INSERT INTO fenced_lease_waiters AS w (name, owner, expires_at)
VALUES ($1, $2, clock_timestamp() + $3::bigint * interval '1 microsecond')
ON CONFLICT (name, owner) DO UPDATE SET expires_at = EXCLUDED.expires_at`

// campaignRefusedSQL records a refused campaigner as waiting and reads,
// after the refusal, the lease and whether another owner's record lasts:
// what the refusal is diagnosed from. (The read's snapshot does not see
// the statement's own record; it asks only for the others'.)
const campaignRefusedSQL = `
WITH waiting AS (` + addLeaseWaiterSQL + `)
SELECT l.name, l.owner, l.fence, l.expires_at, l.released, NOT l.released AND l.expires_at > n.t, n.t,
       EXISTS (SELECT 1 FROM fenced_lease_waiters w WHERE w.name = l.name AND w.owner <> $2 AND w.expires_at > n.t)
FROM fenced_leases l, (SELECT clock_timestamp() AS t) n
WHERE l.name = $1`

// removeLeaseWaiterSQL deletes owner's record of waiting.
const removeLeaseWaiterSQL = `DELETE FROM fenced_lease_waiters WHERE name = $1 AND owner = $2`

// CampaignLease implements driver.CampaignDriver. A refusal is diagnosed
// by the statement that records the campaigner as waiting; if the lease
// changed meanwhile so that it would now be granted, the grant is tried
// again, as AcquireLease does.
func (d *Driver) CampaignLease(ctx context.Context, p driver.CampaignLeaseParams) (*fencedtype.Lease, error) {
	for range 100 {
		l, err := scanLease(d.pool.QueryRow(ctx, campaignLeaseSQL, p.Name, p.Owner, p.TTL.Microseconds()))
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("campaign for lease %q: %w", p.Name, err)
		}
		var cur fencedtype.Lease
		var others bool
		err = d.pool.QueryRow(ctx, campaignRefusedSQL, p.Name, p.Owner, p.Wait.Microseconds()).Scan(
			&cur.Name, &cur.Owner, &cur.Fence, &cur.ExpiresAt, &cur.Released, &cur.Held, &cur.DecidedAt, &others)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			continue
		case err != nil:
			return nil, fmt.Errorf("campaign for lease %q: %w", p.Name, err)
		case cur.Held && cur.Owner != p.Owner:
			return nil, driver.HeldBy(&cur)
		case !cur.Held && cur.Owner == p.Owner && others:
			return nil, driver.ErrWaitersFirst
		}
	}
	return nil, fmt.Errorf("campaign for lease %q: refused 100 times while the lease kept changing hands", p.Name)
}

// AddLeaseWaiter implements driver.CampaignDriver.
func (d *Driver) AddLeaseWaiter(ctx context.Context, w driver.LeaseWaiter) error {
	if _, err := d.pool.Exec(ctx, addLeaseWaiterSQL, w.Name, w.Owner, w.For.Microseconds()); err != nil {
		return fmt.Errorf("add waiter of lease %q: %w", w.Name, err)
	}
	return nil
}

// RemoveLeaseWaiter implements driver.CampaignDriver.
func (d *Driver) RemoveLeaseWaiter(ctx context.Context, name, owner string) error {
	if _, err := d.pool.Exec(ctx, removeLeaseWaiterSQL, name, owner); err != nil {
		return fmt.Errorf("remove waiter of lease %q: %w", name, err)
	}
	return nil
}
