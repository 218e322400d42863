package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// leaseGuardSQL checks that ref is the current unexpired generation. Run as
// the first statement of an IMMEDIATE transaction it holds SQLite's write
// lock, so a takeover (a write) waits until the transaction ends.
const leaseGuardSQL = `
SELECT 1 FROM fenced_leases
WHERE name = ?1 AND owner = ?2 AND fence = ?3 AND NOT released AND expires_us > ` + nowUS

var errGuardFailed = errors.New("lease guard failed")

// GuardLease checks ref inside the caller's own transaction, which must have
// begun IMMEDIATE (this driver's handle does that for every transaction). It
// returns *fencedtype.StaleError or fencedtype.ErrNotFound when the check fails; the
// caller must then roll back.
func (d *Driver) GuardLease(ctx context.Context, tx *sql.Tx, ref driver.LeaseRef) error {
	err := guard(ctx, tx, ref)
	if !errors.Is(err, errGuardFailed) {
		return err
	}
	cur, err := scanLease(tx.QueryRowContext(ctx, getLeaseSQL, ref.Name))
	if errors.Is(err, sql.ErrNoRows) {
		return fencedtype.ErrNotFound
	}
	if err != nil {
		return err
	}
	return driver.DiagnoseLease(ref, cur)
}

func guard(ctx context.Context, tx *sql.Tx, ref driver.LeaseRef) error {
	var one int
	err := tx.QueryRowContext(ctx, leaseGuardSQL, ref.Name, ref.Owner, ref.Fence).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return errGuardFailed
	}
	if err != nil {
		return fmt.Errorf("guard lease %q: %w", ref.Name, err)
	}
	return nil
}

// LeaseTx implements driver.Driver. fn receives a driver.Tx whose
// underlying *sql.Tx is reachable through (*Tx).SQL. A failed guard is
// diagnosed inside the same transaction, then rolled back.
func (d *Driver) LeaseTx(ctx context.Context, ref driver.LeaseRef, fn func(driver.Tx) error) error {
	return d.writeTx(ctx, func(tx *sql.Tx) error {
		if err := d.GuardLease(ctx, tx, ref); err != nil {
			return err
		}
		return fn(&Tx{tx: tx})
	})
}
