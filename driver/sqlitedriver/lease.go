package sqlitedriver

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

// acquireLeaseSQL grants a free lease with fence+1 (a new name starts above
// the fence floor) or extends the same owner's unexpired lease keeping its
// fence. excluded.updated_us carries the statement's clock reading.
const acquireLeaseSQL = leaseGrant + `
WHERE l.released OR l.expires_us <= excluded.updated_us OR l.owner = excluded.owner` + leaseGranted

// leaseGrant is the grant of acquireLeaseSQL and campaignLeaseSQL, before
// the condition that decides it.
const leaseGrant = `
INSERT INTO fenced_leases AS l (name, owner, fence, expires_us, released, updated_us)
SELECT ?1, ?2, m.fence_floor + 1, n.t + ?3, 0, n.t
FROM (SELECT ` + nowUS + ` AS t) n, fenced_meta m WHERE true
ON CONFLICT (name) DO UPDATE SET
    owner      = excluded.owner,
    fence      = CASE WHEN l.owner = excluded.owner AND NOT l.released AND l.expires_us > excluded.updated_us
                      THEN l.fence ELSE l.fence + 1 END,
    expires_us = excluded.expires_us,
    released   = 0,
    updated_us = excluded.updated_us`

// leaseGranted returns the lease a grant wrote.
const leaseGranted = `
RETURNING name, owner, fence, expires_us, released, 1, updated_us`

// renewLeaseSQL extends the lease iff name, owner and fence match and it is
// unreleased and unexpired by the database clock.
const renewLeaseSQL = `
UPDATE fenced_leases SET expires_us = ` + nowUS + ` + ?4, updated_us = ` + nowUS + `
WHERE name = ?1 AND owner = ?2 AND fence = ?3 AND NOT released AND expires_us > ` + nowUS + `
RETURNING name, owner, fence, expires_us, released, 1, updated_us`

// releaseLeaseSQL marks the generation released; matching an already released
// generation again is success. The row and its fence stay.
const releaseLeaseSQL = `
UPDATE fenced_leases SET released = 1, expires_us = MIN(expires_us, ` + nowUS + `), updated_us = ` + nowUS + `
WHERE name = ?1 AND owner = ?2 AND fence = ?3
RETURNING name, owner, fence, expires_us, released, 0, updated_us`

const leaseSelect = `
SELECT l.name, l.owner, l.fence, l.expires_us, l.released, NOT l.released AND l.expires_us > n.t, n.t
FROM fenced_leases l, (SELECT ` + nowUS + ` AS t) n`

const getLeaseSQL = leaseSelect + ` WHERE l.name = ?1`

const listLeasesSQL = leaseSelect + ` ORDER BY l.name`

func scanLease(row sqldb.Scanner) (*fencedtype.Lease, error) {
	var l fencedtype.Lease
	var expires, now int64
	if err := row.Scan(&l.Name, &l.Owner, &l.Fence, &expires, &l.Released, &l.Held, &now); err != nil {
		return nil, err
	}
	l.ExpiresAt, l.DecidedAt = time.UnixMicro(expires).UTC(), time.UnixMicro(now).UTC()
	return &l, nil
}

// AcquireLease implements driver.Driver. The decision and, when it refuses,
// the read that names the holder run in one write transaction, so the
// diagnosis sees exactly the state that decided.
func (d *Driver) AcquireLease(ctx context.Context, p driver.AcquireLeaseParams) (*fencedtype.Lease, error) {
	var l, cur *fencedtype.Lease
	err := d.writeTx(ctx, func(tx *sql.Tx) (err error) {
		l, err = scanLease(tx.QueryRowContext(ctx, acquireLeaseSQL, p.Name, p.Owner, p.TTL.Microseconds()))
		if errors.Is(err, sql.ErrNoRows) {
			cur, err = scanLease(tx.QueryRowContext(ctx, getLeaseSQL, p.Name))
		}
		return err
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("acquire lease %q: %w", p.Name, err)
	case cur != nil:
		return nil, driver.HeldBy(cur)
	}
	return l, nil
}

// RenewLease implements driver.Driver.
func (d *Driver) RenewLease(ctx context.Context, ref driver.LeaseRef, ttl time.Duration) (*fencedtype.Lease, error) {
	return d.leaseWrite(ctx, "renew", ref, renewLeaseSQL, ref.Name, ref.Owner, ref.Fence, ttl.Microseconds())
}

// ReleaseLease implements driver.Driver.
func (d *Driver) ReleaseLease(ctx context.Context, ref driver.LeaseRef) (*fencedtype.Lease, error) {
	return d.leaseWrite(ctx, "release", ref, releaseLeaseSQL, ref.Name, ref.Owner, ref.Fence)
}

// leaseWrite runs one conditional lease statement; zero rows becomes the
// diagnosed typed error here and nowhere else, from a read in the same write
// transaction.
func (d *Driver) leaseWrite(ctx context.Context, op string, ref driver.LeaseRef, query string, args ...any) (*fencedtype.Lease, error) {
	var l, cur *fencedtype.Lease
	failed := false
	err := d.writeTx(ctx, func(tx *sql.Tx) (err error) {
		l, err = scanLease(tx.QueryRowContext(ctx, query, args...))
		if errors.Is(err, sql.ErrNoRows) {
			failed = true
			cur, err = scanLease(tx.QueryRowContext(ctx, getLeaseSQL, ref.Name))
			if errors.Is(err, sql.ErrNoRows) {
				cur, err = nil, nil
			}
		}
		return err
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s lease %q: %w", op, ref.Name, err)
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
