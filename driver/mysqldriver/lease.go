package mysqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// A grant runs in a short transaction whose first statement locks the row.
// MySQL's clock is the statement's start, so a deciding statement that had
// to wait for the row would judge expiry, and date the new expiry and the
// decision, as of before the wait: a grant queued behind the previous grant
// would report an earlier decision than it. Run on a row already locked,
// the deciding statement starts after any wait, like PostgreSQL's
// clock_timestamp() read after the row lock.
//
// A renewal is one statement. If it waited for the row, it judges expiry
// as of before the wait, so it may still renew a lease that ran out during
// the wait: one no one else acquired meanwhile, since a grant must update
// the row, and after its wait the renewal reads the row as any grant left
// it, and refuses. It also extends from before the wait, so the lease is
// never longer than asked (the holder's trust window is measured from
// before its call, earlier still).

// leaseLockSQL reads and locks the row until the transaction ends.
const leaseLockSQL = getLeaseSQL + ` FOR UPDATE`

// leaseTakeSQL grants a free lease with fence+1, or extends the same
// owner's unexpired lease keeping its fence. Parameters: owner, owner,
// ttl_us, name, owner. Single-table UPDATE assigns left to right, so fence
// is decided before owner, released and expires_at change (MariaDB's
// SIMULTANEOUS_ASSIGNMENT mode gives the same result).
const leaseTakeSQL = `
UPDATE fenced_leases SET
    fence      = IF(owner = ? AND NOT released AND expires_at > ` + now + `, fence, fence + 1),
    owner      = ?,
    expires_at = ` + now + ` + INTERVAL ? MICROSECOND,
    released   = FALSE,
    updated_at = ` + now + `
WHERE name = ? AND (released OR expires_at <= ` + now + ` OR owner = ?)`

// leaseFloorSQL share-locks the fence floor until the transaction ends, so
// the first row of a name waits for a fence advance in progress and never
// starts below the new floor (a locking read: its value is the latest).
const leaseFloorSQL = `SELECT fence_floor FROM fenced_meta WHERE id = 1 LOCK IN SHARE MODE`

// leaseInsertSQL creates the row of a name never acquired, one above the
// floor. Parameters: name, owner, floor, ttl_us.
const leaseInsertSQL = `
INSERT INTO fenced_leases (name, owner, fence, expires_at, released, updated_at)
VALUES (?, ?, ? + 1, ` + now + ` + INTERVAL ? MICROSECOND, FALSE, ` + now + `)`

// renewLeaseSQL extends the lease iff name, owner and fence match and it is
// unreleased and unexpired. Its last condition hands the statement's clock
// back as the LAST_INSERT_ID in the OK packet (microseconds since the
// epoch), the one integer MySQL returns from an UPDATE: with it the
// renewal's outcome is fully known without a read. Parameters: ttl_us,
// name, owner, fence.
const renewLeaseSQL = `
UPDATE fenced_leases SET expires_at = ` + now + ` + INTERVAL ? MICROSECOND, updated_at = ` + now + `
WHERE name = ? AND owner = ? AND fence = ? AND NOT released AND expires_at > ` + now + `
    AND LAST_INSERT_ID(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ` + now + `)) > 0`

// releaseLeaseSQL marks the generation released; the row and its fence
// stay. Releasing it again matches and changes nothing, which
// clientFoundRows counts as done. Parameters: name, owner, fence.
const releaseLeaseSQL = `
UPDATE fenced_leases SET
    updated_at = IF(released, updated_at, ` + now + `),
    expires_at = LEAST(expires_at, ` + now + `),
    released   = TRUE
WHERE name = ? AND owner = ? AND fence = ?`

// Read-backs of the row a statement of the same transaction just wrote
// (and still holds locked).
const (
	leaseRowSQL      = `SELECT name, owner, fence, expires_at, released FROM fenced_leases WHERE name = ?`
	leaseReleasedSQL = `SELECT name, owner, fence, expires_at, released, updated_at FROM fenced_leases WHERE name = ?`
)

const leaseSelect = `
SELECT name, owner, fence, expires_at, released, NOT released AND expires_at > ` + now + `, ` + now + `
FROM fenced_leases`

const (
	getLeaseSQL   = leaseSelect + ` WHERE name = ?`
	listLeasesSQL = leaseSelect + ` ORDER BY name`
)

func scanLease(row sqldb.Scanner) (*fencedtype.Lease, error) {
	var l fencedtype.Lease
	var expires, at dbTime
	if err := row.Scan(&l.Name, &l.Owner, &l.Fence, &expires, &l.Released, &l.Held, &at); err != nil {
		return nil, err
	}
	l.ExpiresAt, l.DecidedAt = expires.Time, at.Time
	return &l, nil
}

// readLease reads name through q with query; nil, nil when there is no row.
func readLease(ctx context.Context, q sqldb.Querier, query, name string) (*fencedtype.Lease, error) {
	l, err := sqldb.One(ctx, q, scanLease, query, name)
	if errors.Is(err, fencedtype.ErrNotFound) {
		return nil, nil
	}
	return l, err
}

// readWritten reads back the lease row this transaction just granted for
// ttl. The write set expires_at to its clock reading + ttl, so
// the decision time is exact.
func readWritten(ctx context.Context, tx *sql.Tx, name string, ttl time.Duration) (*fencedtype.Lease, error) {
	l := &fencedtype.Lease{Held: true}
	var expires dbTime
	if err := tx.QueryRowContext(ctx, leaseRowSQL, name).Scan(&l.Name, &l.Owner, &l.Fence, &expires, &l.Released); err != nil {
		return nil, err
	}
	l.ExpiresAt = expires.Time
	l.DecidedAt = l.ExpiresAt.Add(-time.Duration(ttl.Microseconds()) * time.Microsecond)
	return l, nil
}

// readReleased reads back the lease row this transaction just released; it
// was decided at updated_at, which a repeated release leaves as the first
// release set it.
func readReleased(ctx context.Context, tx *sql.Tx, name string) (*fencedtype.Lease, error) {
	l := &fencedtype.Lease{}
	var expires, decided dbTime
	err := tx.QueryRowContext(ctx, leaseReleasedSQL, name).Scan(&l.Name, &l.Owner, &l.Fence, &expires, &l.Released, &decided)
	l.ExpiresAt, l.DecidedAt = expires.Time, decided.Time
	return l, err
}

// AcquireLease implements driver.Driver. An existing row is locked, then
// the conditional take-over decides; a refusal names the holder from the
// locked row, unchanged since. A name never acquired is inserted above the
// fence floor in a transaction of its own: under REPEATABLE READ the
// locking read of a missing row holds a gap lock, and inserting while
// holding it deadlocks with every other first-time acquirer doing the same.
// A duplicate key means another acquirer created the row first; the
// take-over then decides.
func (d *Driver) AcquireLease(ctx context.Context, p driver.AcquireLeaseParams) (*fencedtype.Lease, error) {
	for range 100 {
		l, holder, err := d.leaseTake(ctx, p)
		switch {
		case err != nil:
			return nil, fmt.Errorf("acquire lease %q: %w", p.Name, err)
		case holder != nil:
			return nil, driver.HeldBy(holder)
		case l != nil:
			return l, nil
		}
		l, err = d.leaseCreate(ctx, p, nil)
		switch {
		case errors.Is(err, errRaced):
			continue
		case err != nil:
			return nil, fmt.Errorf("acquire lease %q: %w", p.Name, err)
		}
		return l, nil
	}
	return nil, fmt.Errorf("acquire lease %q: lost the race to create it 100 times", p.Name)
}

// leaseTake grants or extends an existing lease row, or returns its holder,
// or nothing when there is no row.
func (d *Driver) leaseTake(ctx context.Context, p driver.AcquireLeaseParams) (l, holder *fencedtype.Lease, err error) {
	err = d.inTx(ctx, func(tx *sql.Tx) error {
		l, holder = nil, nil
		cur, err := readLease(ctx, tx, leaseLockSQL, p.Name)
		if err != nil || cur == nil {
			return err
		}
		n, err := execCount(ctx, tx, leaseTakeSQL, p.Owner, p.Owner, p.TTL.Microseconds(), p.Name, p.Owner)
		switch {
		case err != nil:
			return err
		case n == 0:
			holder = cur
			return nil
		}
		l, err = readWritten(ctx, tx, p.Name, p.TTL)
		return err
	})
	return l, holder, err
}

// leaseCreate inserts the first row of a name, then runs then (when not
// nil) in the same transaction; errRaced when another acquirer created it
// first.
func (d *Driver) leaseCreate(ctx context.Context, p driver.AcquireLeaseParams, then func(*sql.Tx) error) (*fencedtype.Lease, error) {
	var l *fencedtype.Lease
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		var floor int64
		if err := tx.QueryRowContext(ctx, leaseFloorSQL).Scan(&floor); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, leaseInsertSQL, p.Name, p.Owner, floor, p.TTL.Microseconds())
		if isDuplicate(err) {
			return errRaced
		}
		if err != nil {
			return err
		}
		if then != nil {
			if err := then(tx); err != nil {
				return err
			}
		}
		l, err = readWritten(ctx, tx, p.Name, p.TTL)
		return err
	})
	return l, err
}

// errRaced rolls back a transaction that lost a race to create a row; the
// caller starts again and finds the row.
var errRaced = errors.New("row created concurrently")

// RenewLease implements driver.Driver: one conditional statement; a
// refusal is diagnosed by a read after it.
func (d *Driver) RenewLease(ctx context.Context, ref driver.LeaseRef, ttl time.Duration) (*fencedtype.Lease, error) {
	us := ttl.Microseconds()
	res, err := d.db.ExecContext(ctx, renewLeaseSQL, us, ref.Name, ref.Owner, ref.Fence)
	var n, at int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err == nil && n == 1 {
		at, err = res.LastInsertId()
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("renew lease %q: %w", ref.Name, notMigrated(err))
	case n == 1:
		decided := time.UnixMicro(at).UTC()
		return &fencedtype.Lease{Name: ref.Name, Owner: ref.Owner, Fence: ref.Fence, Held: true,
			ExpiresAt: decided.Add(time.Duration(us) * time.Microsecond), DecidedAt: decided}, nil
	}
	return nil, sqldb.DiagnoseLease(ctx, d.db, scanLease, getLeaseSQL, ref)
}

// ReleaseLease implements driver.Driver: the conditional statement and the
// read-back of what it wrote in one short transaction; zero rows becomes
// the diagnosed typed error here, from a locking read in the same
// transaction.
func (d *Driver) ReleaseLease(ctx context.Context, ref driver.LeaseRef) (*fencedtype.Lease, error) {
	var l, cur *fencedtype.Lease
	failed := false
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		l, cur, failed = nil, nil, false
		n, err := execCount(ctx, tx, releaseLeaseSQL, ref.Name, ref.Owner, ref.Fence)
		switch {
		case err != nil:
			return err
		case n == 0:
			failed = true
			cur, err = readLease(ctx, tx, leaseLockSQL, ref.Name)
			return err
		}
		l, err = readReleased(ctx, tx, ref.Name)
		return err
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("release lease %q: %w", ref.Name, err)
	case failed:
		return nil, driver.DiagnoseLease(ref, cur)
	}
	return l, nil
}

// GetLease implements driver.Driver.
func (d *Driver) GetLease(ctx context.Context, name string) (*fencedtype.Lease, error) {
	l, err := sqldb.GetLease(ctx, d.db, scanLease, getLeaseSQL, name)
	return l, notMigrated(err)
}

// ListLeases implements driver.Driver.
func (d *Driver) ListLeases(ctx context.Context) ([]*fencedtype.Lease, error) {
	ls, err := sqldb.ListLeases(ctx, d.db, scanLease, listLeasesSQL)
	return ls, notMigrated(err)
}
