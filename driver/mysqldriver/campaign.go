package mysqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// campaignTakeSQL is leaseTakeSQL with the campaigner's refusal: a free
// lease is not granted to its last holder while another owner's record of
// waiting for it lasts. Parameters: those of leaseTakeSQL, then owner.
const campaignTakeSQL = leaseTakeSQL + `
    AND NOT (owner = ? AND (released OR expires_at <= ` + now + `) AND EXISTS (
        SELECT 1 FROM fenced_lease_waiters w
        WHERE w.name = fenced_leases.name AND w.owner <> fenced_leases.owner AND w.expires_at > ` + now + `))`

// pruneLeaseWaitersSQL deletes, after a grant, the new holder's record of
// waiting and the lapsed records of the name. Parameters: name, owner.
const pruneLeaseWaitersSQL = `
DELETE FROM fenced_lease_waiters WHERE name = ? AND (owner = ? OR expires_at <= ` + now + `)`

// addLeaseWaiterSQL records owner as waiting for the lease until wait_us
// from now, replacing the record it had. Parameters: name, owner, wait_us.
const addLeaseWaiterSQL = `
INSERT INTO fenced_lease_waiters (name, owner, expires_at) VALUES (?, ?, ` + now + ` + INTERVAL ? MICROSECOND)
ON DUPLICATE KEY UPDATE expires_at = VALUES(expires_at)`

// removeLeaseWaiterSQL deletes owner's record of waiting. Parameters:
// name, owner.
const removeLeaseWaiterSQL = `DELETE FROM fenced_lease_waiters WHERE name = ? AND owner = ?`

// CampaignLease implements driver.CampaignDriver as AcquireLease does:
// the row locked, then the conditional take-over decides, and the records
// of waiting are pruned (a grant) or the refused campaigner's is written
// in the same transaction. The locked row, unchanged since, names the
// holder; a refusal of the owner's own last lease can only be for
// another's record.
func (d *Driver) CampaignLease(ctx context.Context, p driver.CampaignLeaseParams) (*fencedtype.Lease, error) {
	prune := func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, pruneLeaseWaitersSQL, p.Name, p.Owner)
		return err
	}
	for range 100 {
		var l, cur *fencedtype.Lease
		err := d.inTx(ctx, func(tx *sql.Tx) error {
			l, cur = nil, nil
			var err error
			if cur, err = readLease(ctx, tx, leaseLockSQL, p.Name); err != nil || cur == nil {
				return err
			}
			n, err := execCount(ctx, tx, campaignTakeSQL, p.Owner, p.Owner, p.TTL.Microseconds(), p.Name, p.Owner, p.Owner)
			switch {
			case err != nil:
				return err
			case n == 0:
				_, err = tx.ExecContext(ctx, addLeaseWaiterSQL, p.Name, p.Owner, p.Wait.Microseconds())
				return err
			}
			if err := prune(tx); err != nil {
				return err
			}
			cur = nil
			l, err = readWritten(ctx, tx, p.Name, p.TTL)
			return err
		})
		switch {
		case err != nil:
			return nil, fmt.Errorf("campaign for lease %q: %w", p.Name, err)
		case l != nil:
			return l, nil
		case cur != nil && cur.Owner != p.Owner:
			return nil, driver.HeldBy(cur)
		case cur != nil:
			return nil, driver.ErrWaitersFirst
		}
		l, err = d.leaseCreate(ctx, p.AcquireLeaseParams, prune)
		switch {
		case errors.Is(err, errRaced):
			continue
		case err != nil:
			return nil, fmt.Errorf("campaign for lease %q: %w", p.Name, err)
		}
		return l, nil
	}
	return nil, fmt.Errorf("campaign for lease %q: lost the race to create it 100 times", p.Name)
}

// AddLeaseWaiter implements driver.CampaignDriver.
func (d *Driver) AddLeaseWaiter(ctx context.Context, w driver.LeaseWaiter) error {
	if _, err := d.db.ExecContext(ctx, addLeaseWaiterSQL, w.Name, w.Owner, w.For.Microseconds()); err != nil {
		return fmt.Errorf("add waiter of lease %q: %w", w.Name, err)
	}
	return nil
}

// RemoveLeaseWaiter implements driver.CampaignDriver.
func (d *Driver) RemoveLeaseWaiter(ctx context.Context, name, owner string) error {
	if _, err := d.db.ExecContext(ctx, removeLeaseWaiterSQL, name, owner); err != nil {
		return fmt.Errorf("remove waiter of lease %q: %w", name, err)
	}
	return nil
}
