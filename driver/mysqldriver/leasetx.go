package mysqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fenced/fenced/driver"
)

// leaseGuardSQL share-locks the lease row iff this generation is current.
// Holding the lock until the transaction ends makes a takeover (which must
// update the row) wait, so nothing commits under a superseded fence. It is
// a locking read, so it sees the latest committed row whatever snapshot the
// transaction holds. Parameters: name, owner, fence.
const leaseGuardSQL = `
SELECT 1 FROM fenced_leases
WHERE name = ? AND owner = ? AND fence = ? AND NOT released AND expires_at > ` + now + `
LOCK IN SHARE MODE`

// GuardLease checks, inside the caller's own transaction, that ref is the
// current unexpired generation and share-locks the lease row until the
// transaction ends. It returns *fencedtype.StaleError or fencedtype.ErrNotFound when
// the check fails; the caller must then roll back.
func (d *Driver) GuardLease(ctx context.Context, tx *sql.Tx, ref driver.LeaseRef) error {
	var one int
	err := tx.QueryRowContext(ctx, leaseGuardSQL, ref.Name, ref.Owner, ref.Fence).Scan(&one)
	if err == nil {
		return nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("guard lease %q: %w", ref.Name, err)
	}
	cur, err := readLease(ctx, tx, getLeaseSQL+` LOCK IN SHARE MODE`, ref.Name)
	if err != nil {
		return fmt.Errorf("guard lease %q: %w", ref.Name, err)
	}
	return driver.DiagnoseLease(ref, cur)
}

// LeaseTx implements driver.Driver. fn receives a driver.Tx whose
// underlying *sql.Tx is reachable through (*Tx).SQL. It is not retried: fn
// is the caller's code.
func (d *Driver) LeaseTx(ctx context.Context, ref driver.LeaseRef, fn func(driver.Tx) error) error {
	return runTx(ctx, d.db, func(tx *sql.Tx) error {
		if err := d.GuardLease(ctx, tx, ref); err != nil {
			return err
		}
		return fn(&Tx{tx: tx})
	})
}
