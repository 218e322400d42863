package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// campaignLeaseSQL is acquireLeaseSQL with the campaigner's refusal: a
// free lease is not granted to its last holder while another owner's
// record of waiting for it lasts.
const campaignLeaseSQL = leaseGrant + `
WHERE (l.released OR l.expires_us <= excluded.updated_us OR l.owner = excluded.owner)
  AND NOT (l.owner = excluded.owner AND (l.released OR l.expires_us <= excluded.updated_us) AND EXISTS (
      SELECT 1 FROM fenced_lease_waiters w
      WHERE w.name = l.name AND w.owner <> l.owner AND w.expires_us > excluded.updated_us))` + leaseGranted

// pruneLeaseWaitersSQL deletes, after a grant, the new holder's record of
// waiting and the lapsed records of the name.
const pruneLeaseWaitersSQL = `
DELETE FROM fenced_lease_waiters WHERE name = ?1 AND (owner = ?2 OR expires_us <= ` + nowUS + `)`

// addLeaseWaiterSQL records owner as waiting for the lease until ?3
// microseconds from now, replacing the record it had.
const addLeaseWaiterSQL = `
INSERT INTO fenced_lease_waiters (name, owner, expires_us) VALUES (?1, ?2, ` + nowUS + ` + ?3)
ON CONFLICT (name, owner) DO UPDATE SET expires_us = excluded.expires_us`

// removeLeaseWaiterSQL deletes owner's record of waiting.
const removeLeaseWaiterSQL = `DELETE FROM fenced_lease_waiters WHERE name = ?1 AND owner = ?2`

// CampaignLease implements driver.CampaignDriver. The decision, then either
// the pruning of the records or the refused campaigner's record and the
// read that names the holder, run in one write transaction, so the
// diagnosis sees exactly the state that decided: a refusal of the owner's
// own last lease can only be for another's record.
func (d *Driver) CampaignLease(ctx context.Context, p driver.CampaignLeaseParams) (*fencedtype.Lease, error) {
	var l, cur *fencedtype.Lease
	err := d.writeTx(ctx, func(tx *sql.Tx) (err error) {
		l, err = scanLease(tx.QueryRowContext(ctx, campaignLeaseSQL, p.Name, p.Owner, p.TTL.Microseconds()))
		if err == nil {
			_, err = tx.ExecContext(ctx, pruneLeaseWaitersSQL, p.Name, p.Owner)
			return err
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if _, err := tx.ExecContext(ctx, addLeaseWaiterSQL, p.Name, p.Owner, p.Wait.Microseconds()); err != nil {
			return err
		}
		cur, err = scanLease(tx.QueryRowContext(ctx, getLeaseSQL, p.Name))
		return err
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("campaign for lease %q: %w", p.Name, err)
	case cur == nil:
		return l, nil
	case cur.Owner != p.Owner:
		return nil, driver.HeldBy(cur)
	}
	return nil, driver.ErrWaitersFirst
}

// AddLeaseWaiter implements driver.CampaignDriver.
func (d *Driver) AddLeaseWaiter(ctx context.Context, w driver.LeaseWaiter) error {
	err := d.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, addLeaseWaiterSQL, w.Name, w.Owner, w.For.Microseconds())
		return err
	})
	if err != nil {
		return fmt.Errorf("add waiter of lease %q: %w", w.Name, err)
	}
	return nil
}

// RemoveLeaseWaiter implements driver.CampaignDriver.
func (d *Driver) RemoveLeaseWaiter(ctx context.Context, name, owner string) error {
	err := d.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, removeLeaseWaiterSQL, name, owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("remove waiter of lease %q: %w", name, err)
	}
	return nil
}
