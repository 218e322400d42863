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

// acquireLeaseSQL grants a free lease with fence+1 (a new name starts above
// the fence floor) or extends the same owner's unexpired lease keeping its
// fence. clock_timestamp() is called in the DO UPDATE clauses, which run after
// the conflicting row is locked, so expiry is judged at the moment of
// deciding, not when the statement began (it may have waited for the lock).
// The decision time returned is the reading the new expiry was computed from.
const acquireLeaseSQL = leaseGrant + `
WHERE l.released OR l.expires_at <= clock_timestamp() OR l.owner = EXCLUDED.owner` + leaseGranted

// leaseGrant is the grant of acquireLeaseSQL and campaignLeaseSQL, before
// the condition that decides it.
const leaseGrant = `
INSERT INTO fenced_leases AS l (name, owner, fence, expires_at, released, updated_at)
SELECT $1, $2, m.fence_floor + 1, clock_timestamp() + $3::bigint * interval '1 microsecond', false, clock_timestamp()
FROM fenced_meta m
ON CONFLICT (name) DO UPDATE SET
    owner      = EXCLUDED.owner,
    fence      = CASE WHEN l.owner = EXCLUDED.owner AND NOT l.released AND l.expires_at > clock_timestamp()
                      THEN l.fence ELSE l.fence + 1 END,
    expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond',
    released   = false,
    updated_at = clock_timestamp()`

// leaseGranted returns the lease a grant wrote.
const leaseGranted = `
RETURNING l.name, l.owner, l.fence, l.expires_at, l.released, true, l.expires_at - $3::bigint * interval '1 microsecond'`

// renewLeaseSQL extends the lease iff name, owner and fence match and it is
// unreleased and unexpired by the database clock (re-read if the statement
// waited for the row).
const renewLeaseSQL = `
UPDATE fenced_leases l
SET expires_at = clock_timestamp() + $4::bigint * interval '1 microsecond', updated_at = clock_timestamp()
WHERE l.name = $1 AND l.owner = $2 AND l.fence = $3 AND NOT l.released AND l.expires_at > clock_timestamp()
RETURNING l.name, l.owner, l.fence, l.expires_at, l.released, true, l.expires_at - $4::bigint * interval '1 microsecond'`

// releaseLeaseSQL marks the generation released; matching an already released
// generation again is success. The row and its fence stay.
const releaseLeaseSQL = `
UPDATE fenced_leases l
SET released = true, expires_at = LEAST(l.expires_at, clock_timestamp()), updated_at = clock_timestamp()
WHERE l.name = $1 AND l.owner = $2 AND l.fence = $3
RETURNING l.name, l.owner, l.fence, l.expires_at, l.released, false, l.updated_at`

const leaseSelect = `
SELECT l.name, l.owner, l.fence, l.expires_at, l.released, NOT l.released AND l.expires_at > n.t, n.t
FROM fenced_leases l, (SELECT clock_timestamp() AS t) n`

const getLeaseSQL = leaseSelect + ` WHERE l.name = $1`

const listLeasesSQL = leaseSelect + ` ORDER BY l.name`

func scanLease(row pgx.Row) (*fencedtype.Lease, error) {
	r := newLeaseRow()
	if err := row.Scan(r.dest[:]...); err != nil {
		return nil, err
	}
	return &r.l, nil
}

// leaseRow is a lease and the scan destinations of its seven columns in one
// allocation (a separate []any of them would be a second one per call).
type leaseRow struct {
	l    fencedtype.Lease
	dest [7]any
}

func newLeaseRow() *leaseRow {
	r := &leaseRow{}
	r.dest = [7]any{&r.l.Name, &r.l.Owner, &r.l.Fence, &r.l.ExpiresAt, &r.l.Released, &r.l.Held, &r.l.DecidedAt}
	return r
}

// queryLease runs a statement returning one lease row through the pool,
// retried as pool.QueryRow is, and scans it: the lease operations' path,
// without a pgx.Row to box per call.
func (d *Driver) queryLease(ctx context.Context, sql string, args ...any) (*fencedtype.Lease, error) {
	r := newLeaseRow()
	if err := d.pool.scanRow(ctx, r.dest[:], sql, args...); err != nil {
		return nil, err
	}
	return &r.l, nil
}

// scanRow runs a one-row query, retried as QueryRow is, and scans it into
// dest.
func (p *pool) scanRow(ctx context.Context, dest []any, sql string, args ...any) error {
	return p.retry(ctx, func() error { return p.Pool.QueryRow(ctx, sql, args...).Scan(dest...) })
}

// AcquireLease implements driver.Driver.
func (d *Driver) AcquireLease(ctx context.Context, p driver.AcquireLeaseParams) (*fencedtype.Lease, error) {
	// A refusal is diagnosed by a read; if the holder's lease ended between
	// the two statements, the acquire is simply tried again. Each retry means
	// another client changed the row, so this ends unless the row churns
	// without pause; then a plain error, never a made-up holder.
	for range 100 {
		l, err := d.queryLease(ctx, acquireLeaseSQL, p.Name, p.Owner, p.TTL.Microseconds())
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("acquire lease %q: %w", p.Name, err)
		}
		cur, err := d.GetLease(ctx, p.Name)
		if err != nil && !errors.Is(err, fencedtype.ErrNotFound) {
			return nil, err
		}
		if cur != nil && cur.Held && cur.Owner != p.Owner {
			return nil, driver.HeldBy(cur)
		}
	}
	return nil, fmt.Errorf("acquire lease %q: refused 100 times while the lease kept changing hands", p.Name)
}

// RenewLease implements driver.Driver.
func (d *Driver) RenewLease(ctx context.Context, ref driver.LeaseRef, ttl time.Duration) (*fencedtype.Lease, error) {
	l, err := d.queryLease(ctx, renewLeaseSQL, ref.Name, ref.Owner, ref.Fence, ttl.Microseconds())
	return d.leaseOutcome(ctx, "renew", ref, l, err)
}

// ReleaseLease implements driver.Driver.
func (d *Driver) ReleaseLease(ctx context.Context, ref driver.LeaseRef) (*fencedtype.Lease, error) {
	l, err := d.queryLease(ctx, releaseLeaseSQL, ref.Name, ref.Owner, ref.Fence)
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
	return nil, d.diagnoseLease(ctx, ref)
}

// diagnoseLease explains why a write on ref changed nothing, from a read of
// the lease after it.
func (d *Driver) diagnoseLease(ctx context.Context, ref driver.LeaseRef) error {
	cur, err := d.GetLease(ctx, ref.Name)
	if err != nil && !errors.Is(err, fencedtype.ErrNotFound) {
		return err
	}
	return driver.DiagnoseLease(ref, cur)
}

// GetLease implements driver.Driver.
func (d *Driver) GetLease(ctx context.Context, name string) (*fencedtype.Lease, error) {
	l, err := d.queryLease(ctx, getLeaseSQL, name)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fencedtype.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get lease %q: %w", name, err)
	}
	return l, nil
}

// ListLeases implements driver.Driver.
func (d *Driver) ListLeases(ctx context.Context) ([]*fencedtype.Lease, error) {
	rows, err := d.pool.Query(ctx, listLeasesSQL)
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	ls, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*fencedtype.Lease, error) { return scanLease(r) })
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	return ls, nil
}
