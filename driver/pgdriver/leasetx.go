package pgdriver

import (
	"context"
	"errors"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/jackc/pgx/v5"
)

// leaseGuardSQL share-locks the lease row and says whether this generation is
// current. Holding the lock until the transaction ends makes a takeover
// (which must update the row) wait, so nothing commits under a superseded
// fence. The row is locked by its name and the check is made on the version
// locked: under READ COMMITTED that is the newest, and in a REPEATABLE READ
// or SERIALIZABLE transaction whose snapshot predates a change to the row
// the lock fails with a serialization error, where a check in the WHERE
// clause would judge the snapshot's old version (a renewed lease as expired).
const leaseGuardSQL = `
SELECT owner = $2 AND fence = $3 AND NOT released AND expires_at > clock_timestamp()
FROM fenced_leases WHERE name = $1
FOR SHARE`

// errGuardFailed marks a guard check that matched no row.
var errGuardFailed = errors.New("lease guard failed")

// GuardLease checks, inside the caller's own transaction, that ref is the
// current unexpired generation and share-locks the lease row until the
// transaction ends. It returns *fencedtype.StaleError or fencedtype.ErrNotFound when
// the check fails; the caller must then roll back.
func (d *Driver) GuardLease(ctx context.Context, tx pgx.Tx, ref driver.LeaseRef) error {
	err := guard(ctx, tx, ref)
	if errors.Is(err, errGuardFailed) {
		return d.diagnoseLease(ctx, ref)
	}
	return err
}

func guard(ctx context.Context, tx pgx.Tx, ref driver.LeaseRef) error {
	var current bool
	err := tx.QueryRow(ctx, leaseGuardSQL, ref.Name, ref.Owner, ref.Fence).Scan(&current)
	if errors.Is(err, pgx.ErrNoRows) {
		return errGuardFailed
	}
	if err != nil {
		return fmt.Errorf("guard lease %q: %w", ref.Name, err)
	}
	if !current {
		return errGuardFailed
	}
	return nil
}

// LeaseTx implements driver.Driver. fn receives a driver.Tx whose
// underlying pgx.Tx is reachable through (*Tx).Pgx.
func (d *Driver) LeaseTx(ctx context.Context, ref driver.LeaseRef, fn func(driver.Tx) error) error {
	err := d.pool.inTx(ctx, func(tx pgx.Tx) error {
		if err := guard(ctx, tx, ref); err != nil {
			return err
		}
		return fn(&Tx{tx: tx})
	})
	if errors.Is(err, errGuardFailed) {
		return d.diagnoseLease(ctx, ref)
	}
	return err
}
