package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/sqldb"
)

// leaseGuardSQL checks that ref is the current unexpired generation. Run as
// the first statement of an IMMEDIATE transaction it holds SQLite's write
// lock, so a takeover (a write) waits until the transaction ends.
const leaseGuardSQL = `
SELECT 1 FROM fenced_leases
WHERE name = ?1 AND owner = ?2 AND fence = ?3 AND NOT released AND expires_us > ` + nowUS

// GuardLease checks ref inside the caller's own transaction, which must have
// begun IMMEDIATE (this driver's handle does that for every transaction). It
// returns *fencedtype.StaleError or fencedtype.ErrNotFound when the check fails,
// diagnosed from a read in the same transaction; the caller must then roll
// back.
func (d *Driver) GuardLease(ctx context.Context, tx *sql.Tx, ref driver.LeaseRef) error {
	return sqldb.Guard(ctx, tx, fmt.Sprintf("lease %q", ref.Name), func() error {
		return sqldb.DiagnoseLease(ctx, tx, scanLease, getLeaseSQL, ref)
	}, leaseGuardSQL, ref.Name, ref.Owner, ref.Fence)
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
