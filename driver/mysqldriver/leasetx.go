package mysqldriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/sqldb"
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
	return sqldb.Guard(ctx, tx, fmt.Sprintf("lease %q", ref.Name), func() error {
		return sqldb.DiagnoseLease(ctx, tx, scanLease, getLeaseSQL+` LOCK IN SHARE MODE`, ref)
	}, leaseGuardSQL, ref.Name, ref.Owner, ref.Fence)
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
