package pgdriver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
)

// leaseAcquireSQL grants a free lease with fence+1 (a new name starts above
// the fence floor) or extends the same owner's unexpired lease keeping its
// fence. clock_timestamp() is called in the DO UPDATE clauses, which run after
// the conflicting row is locked, so expiry is judged at the moment of
// deciding, not when the statement began (it may have waited for the lock).
// The decision time returned is the reading the new expiry was computed from.
const leaseAcquireSQL = `
INSERT INTO fenced_leases AS l (name, owner, fence, expires_at, released, updated_at)
SELECT $1, $2, m.fence_floor + 1, clock_timestamp() + $3::bigint * interval '1 microsecond', false, clock_timestamp()
FROM fenced_meta m
ON CONFLICT (name) DO UPDATE SET
    owner      = EXCLUDED.owner,
    fence      = CASE WHEN l.owner = EXCLUDED.owner AND NOT l.released AND l.expires_at > clock_timestamp()
                      THEN l.fence ELSE l.fence + 1 END,
    expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond',
    released   = false,
    updated_at = clock_timestamp()
WHERE l.released OR l.expires_at <= clock_timestamp() OR l.owner = EXCLUDED.owner
RETURNING l.name, l.owner, l.fence, l.expires_at, l.released, true, l.expires_at - $3::bigint * interval '1 microsecond'`

// leaseRenewSQL extends the lease iff name, owner and fence match and it is
// unreleased and unexpired by the database clock (re-read if the statement
// waited for the row).
const leaseRenewSQL = `
UPDATE fenced_leases l
SET expires_at = clock_timestamp() + $4::bigint * interval '1 microsecond', updated_at = clock_timestamp()
WHERE l.name = $1 AND l.owner = $2 AND l.fence = $3 AND NOT l.released AND l.expires_at > clock_timestamp()
RETURNING l.name, l.owner, l.fence, l.expires_at, l.released, true, l.expires_at - $4::bigint * interval '1 microsecond'`

// leaseReleaseSQL marks the generation released; matching an already released
// generation again is success. The row and its fence stay.
const leaseReleaseSQL = `
UPDATE fenced_leases l
SET released = true, expires_at = LEAST(l.expires_at, clock_timestamp()), updated_at = clock_timestamp()
WHERE l.name = $1 AND l.owner = $2 AND l.fence = $3
RETURNING l.name, l.owner, l.fence, l.expires_at, l.released, false, l.updated_at`

const leaseSelect = `
SELECT l.name, l.owner, l.fence, l.expires_at, l.released, NOT l.released AND l.expires_at > n.t, n.t
FROM fenced_leases l, (SELECT clock_timestamp() AS t) n`

const leaseGetSQL = leaseSelect + ` WHERE l.name = $1`

const leaseListSQL = leaseSelect + ` ORDER BY l.name`

func scanLease(row pgx.Row) (*fencedtype.Lease, error) {
	var l fencedtype.Lease
	if err := row.Scan(&l.Name, &l.Owner, &l.Fence, &l.ExpiresAt, &l.Released, &l.Held, &l.DecidedAt); err != nil {
		return nil, err
	}
	return &l, nil
}

// LeaseAcquire implements driver.Driver.
func (d *Driver) LeaseAcquire(ctx context.Context, p driver.LeaseAcquireParams) (*fencedtype.Lease, error) {
	// A refusal is diagnosed by a read; if the holder's lease ended between
	// the two statements, the acquire is simply tried again. Each retry means
	// another client changed the row, so this ends unless the row churns
	// without pause; then a plain error, never a made-up holder.
	for range 100 {
		l, err := scanLease(d.pool.QueryRow(ctx, leaseAcquireSQL, p.Name, p.Owner, p.TTL.Microseconds()))
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("acquire lease %q: %w", p.Name, err)
		}
		cur, err := d.LeaseGet(ctx, p.Name)
		if err != nil && !errors.Is(err, fencedtype.ErrNotFound) {
			return nil, err
		}
		if cur != nil && cur.Held && cur.Owner != p.Owner {
			return nil, driver.HeldBy(cur)
		}
	}
	return nil, fmt.Errorf("acquire lease %q: refused 100 times while the lease kept changing hands", p.Name)
}

// LeaseRenew implements driver.Driver.
func (d *Driver) LeaseRenew(ctx context.Context, ref driver.LeaseRef, ttl time.Duration) (*fencedtype.Lease, error) {
	l, err := scanLease(d.pool.QueryRow(ctx, leaseRenewSQL, ref.Name, ref.Owner, ref.Fence, ttl.Microseconds()))
	return d.leaseOutcome(ctx, "renew", ref, l, err)
}

// LeaseRelease implements driver.Driver.
func (d *Driver) LeaseRelease(ctx context.Context, ref driver.LeaseRef) (*fencedtype.Lease, error) {
	l, err := scanLease(d.pool.QueryRow(ctx, leaseReleaseSQL, ref.Name, ref.Owner, ref.Fence))
	return d.leaseOutcome(ctx, "release", ref, l, err)
}

// leaseOutcome turns a conditional write's result into the row or the
// diagnosed error: the single place where zero rows becomes a typed error.
func (d *Driver) leaseOutcome(ctx context.Context, op string, ref driver.LeaseRef, l *fencedtype.Lease, err error) (*fencedtype.Lease, error) {
	if err == nil {
		return l, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%s lease %q: %w", op, ref.Name, err)
	}
	cur, err := d.LeaseGet(ctx, ref.Name)
	if err != nil && !errors.Is(err, fencedtype.ErrNotFound) {
		return nil, err
	}
	return nil, driver.DiagnoseLease(ref, cur)
}

// LeaseGet implements driver.Driver.
func (d *Driver) LeaseGet(ctx context.Context, name string) (*fencedtype.Lease, error) {
	l, err := scanLease(d.pool.QueryRow(ctx, leaseGetSQL, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fencedtype.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get lease %q: %w", name, err)
	}
	return l, nil
}

// LeaseList implements driver.Driver.
func (d *Driver) LeaseList(ctx context.Context) ([]*fencedtype.Lease, error) {
	rows, err := d.pool.Query(ctx, leaseListSQL)
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	defer rows.Close()
	var out []*fencedtype.Lease
	for rows.Next() {
		l, err := scanLease(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}
