package pgdriver

import (
	"context"
	"errors"
	"fmt"
	"github.com/fenced/fenced/driver/internal/reads"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
)

var _ driver.SemaphoreDriver = (*Driver)(nil)

// An acquire runs in one transaction whose first statement creates or locks
// the semaphore row (semLockSQL), so acquirers of one name follow each
// other; every later decision is a conditional statement on rows of that
// name, judged by clock_timestamp() after any row lock it waited for.

// semLockSQL creates the semaphore at the fence floor, or sets its number of
// slots; either way the row stays locked until the transaction ends. A
// fence advance locks the tables, so a new name waits for it and starts
// above the new floor. Parameters: name, slots.
const semLockSQL = `
INSERT INTO fenced_semaphores AS s (name, slots, fence, updated_at)
SELECT $1, $2, m.fence_floor, clock_timestamp() FROM fenced_meta m
ON CONFLICT (name) DO UPDATE SET slots = EXCLUDED.slots, updated_at = clock_timestamp()
RETURNING s.fence`

// slotExtendSQL extends the same owner's current grant keeping its fence.
// Parameters: name, owner, ttl_us.
var slotExtendSQL = `
UPDATE fenced_semaphore_slots x
SET expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond', updated_at = clock_timestamp()
WHERE x.name = $1 AND x.owner = $2 AND NOT x.released AND x.expires_at > clock_timestamp()
RETURNING ` + slotReturning("$3")

// slotGrantSQL grants the lowest free slot below N — never granted,
// released, or expired by the database clock — with the fence after the
// semaphore's last (its row is locked by this transaction). The DO UPDATE
// re-checks that the slot is free on the row it locked. Parameters: name,
// owner, slots, ttl_us.
var slotGrantSQL = `
INSERT INTO fenced_semaphore_slots AS x (name, slot, owner, fence, expires_at, released, updated_at)
SELECT $1, g.slot, $2, s.fence + 1, clock_timestamp() + $4::bigint * interval '1 microsecond', false, clock_timestamp()
FROM generate_series(0, $3::int - 1) AS g(slot), fenced_semaphores s
WHERE s.name = $1 AND NOT EXISTS (
    SELECT 1 FROM fenced_semaphore_slots h
    WHERE h.name = $1 AND h.slot = g.slot AND NOT h.released AND h.expires_at > clock_timestamp())
ORDER BY g.slot LIMIT 1
ON CONFLICT (name, slot) DO UPDATE SET
    owner      = EXCLUDED.owner,
    fence      = EXCLUDED.fence,
    expires_at = clock_timestamp() + $4::bigint * interval '1 microsecond',
    released   = false,
    updated_at = clock_timestamp()
WHERE x.released OR x.expires_at <= clock_timestamp()
RETURNING ` + slotReturning("$4")

// semBumpSQL records a grant's fence as the semaphore's last. Parameters:
// name, fence.
const semBumpSQL = `UPDATE fenced_semaphores SET fence = $2 WHERE name = $1`

// slotReturning is what a grant or renewal returns, given the parameter
// holding its TTL: the decision time is the reading the expiry was computed
// from.
func slotReturning(ttl string) string {
	return `x.name, x.slot, x.owner, x.fence, x.expires_at, x.released, true, x.expires_at - ` + ttl + `::bigint * interval '1 microsecond'`
}

// renewSlotSQL extends the grant iff name, owner and fence match and it is
// unreleased and unexpired by the database clock (re-read if the statement
// waited for the row). Parameters: name, owner, fence, ttl_us.
var renewSlotSQL = `
UPDATE fenced_semaphore_slots x
SET expires_at = clock_timestamp() + $4::bigint * interval '1 microsecond', updated_at = clock_timestamp()
WHERE x.name = $1 AND x.owner = $2 AND x.fence = $3 AND NOT x.released AND x.expires_at > clock_timestamp()
RETURNING ` + slotReturning("$4")

// releaseSlotSQL marks the grant released; matching an already released
// grant again is success. Parameters: name, owner, fence.
const releaseSlotSQL = `
UPDATE fenced_semaphore_slots x
SET released = true, expires_at = LEAST(x.expires_at, clock_timestamp()),
    updated_at = CASE WHEN x.released THEN x.updated_at ELSE clock_timestamp() END
WHERE x.name = $1 AND x.owner = $2 AND x.fence = $3
RETURNING x.name, x.slot, x.owner, x.fence, x.expires_at, x.released, false, x.updated_at`

const slotSelect = `
SELECT x.name, x.slot, x.owner, x.fence, x.expires_at, x.released, NOT x.released AND x.expires_at > n.t, n.t
FROM fenced_semaphore_slots x, (SELECT clock_timestamp() AS t) n`

// slotByFenceSQL reads the slot row carrying a fence. Parameters: name, fence.
const slotByFenceSQL = slotSelect + ` WHERE x.name = $1 AND x.fence = $2 ORDER BY x.slot LIMIT 1`

// slotHoldersSQL reads the grants held below N, the first to run out first.
// Parameters: name, slots.
const slotHoldersSQL = slotSelect + `
WHERE x.name = $1 AND x.slot < $2 AND NOT x.released AND x.expires_at > n.t
ORDER BY x.expires_at, x.slot`

const semFenceSQL = `SELECT fence FROM fenced_semaphores WHERE name = $1`

// semaphoreSelect reads semaphores with their holders, one row per holder
// (or one without a holder), in one statement.
const semaphoreSelect = `
SELECT s.name, s.slots, s.fence, n.t, x.slot, x.owner, x.fence, x.expires_at
FROM fenced_semaphores s CROSS JOIN (SELECT clock_timestamp() AS t) n
LEFT JOIN fenced_semaphore_slots x ON x.name = s.name AND NOT x.released AND x.expires_at > n.t`

const (
	getSemaphoreSQL   = semaphoreSelect + ` WHERE s.name = $1 ORDER BY x.slot`
	listSemaphoresSQL = semaphoreSelect + ` ORDER BY s.name, x.slot`
)

func scanSlot(row pgx.Row) (*fencedtype.Slot, error) {
	var s fencedtype.Slot
	var slot int32
	if err := row.Scan(&s.Name, &slot, &s.Owner, &s.Fence, &s.ExpiresAt, &s.Released, &s.Held, &s.DecidedAt); err != nil {
		return nil, err
	}
	s.Slot = int(slot)
	return &s, nil
}

func scanSemaphoreRow(row pgx.Row) (reads.SemaphoreRow, error) {
	var r reads.SemaphoreRow
	var slots int32
	var slot *int32
	var owner *string
	var fence *int64
	var expires *time.Time
	if err := row.Scan(&r.Name, &slots, &r.Fence, &r.DecidedAt, &slot, &owner, &fence, &expires); err != nil {
		return r, err
	}
	r.Slots = int(slots)
	if slot != nil {
		r.Holder = &fencedtype.Slot{Slot: int(*slot), Owner: *owner, Fence: *fence, ExpiresAt: *expires}
	}
	return r, nil
}

// errSlotRaced rolls back an acquire whose grant found its slot taken after
// choosing it; the acquire starts again.
var errSlotRaced = errors.New("slot changed while granting")

// AcquireSlot implements driver.SemaphoreDriver.
func (d *Driver) AcquireSlot(ctx context.Context, p driver.AcquireSlotParams) (*fencedtype.Slot, error) {
	for range 100 {
		var s *fencedtype.Slot
		var holders []*fencedtype.Slot
		err := d.pool.inTx(ctx, func(tx pgx.Tx) error {
			s, holders = nil, nil
			var last int64
			if err := tx.QueryRow(ctx, semLockSQL, p.Name, p.Slots).Scan(&last); err != nil {
				return err
			}
			var err error
			s, err = scanSlot(tx.QueryRow(ctx, slotExtendSQL, p.Name, p.Owner, p.TTL.Microseconds()))
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			s, err = scanSlot(tx.QueryRow(ctx, slotGrantSQL, p.Name, p.Owner, p.Slots, p.TTL.Microseconds()))
			if err == nil {
				_, err = tx.Exec(ctx, semBumpSQL, p.Name, s.Fence)
				return err
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			s = nil
			rows, err := tx.Query(ctx, slotHoldersSQL, p.Name, p.Slots)
			if err != nil {
				return err
			}
			holders, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*fencedtype.Slot, error) { return scanSlot(r) })
			if err == nil && len(holders) < p.Slots {
				return errSlotRaced
			}
			return err
		})
		switch {
		case errors.Is(err, errSlotRaced):
			continue
		case err != nil:
			return nil, fmt.Errorf("acquire slot of %q: %w", p.Name, err)
		case s != nil:
			return s, nil
		}
		return nil, driver.SlotsHeld(p.Name, p.Slots, holders)
	}
	return nil, fmt.Errorf("acquire slot of %q: refused 100 times while its slots kept changing", p.Name)
}

// RenewSlot implements driver.SemaphoreDriver.
func (d *Driver) RenewSlot(ctx context.Context, ref driver.SlotRef, ttl time.Duration) (*fencedtype.Slot, error) {
	s, err := scanSlot(d.pool.QueryRow(ctx, renewSlotSQL, ref.Name, ref.Owner, ref.Fence, ttl.Microseconds()))
	return d.slotOutcome(ctx, "renew", ref, s, err)
}

// ReleaseSlot implements driver.SemaphoreDriver.
func (d *Driver) ReleaseSlot(ctx context.Context, ref driver.SlotRef) (*fencedtype.Slot, error) {
	s, err := scanSlot(d.pool.QueryRow(ctx, releaseSlotSQL, ref.Name, ref.Owner, ref.Fence))
	return d.slotOutcome(ctx, "release", ref, s, err)
}

// slotOutcome turns a conditional write's result into the grant or the
// diagnosed error.
func (d *Driver) slotOutcome(ctx context.Context, op string, ref driver.SlotRef, s *fencedtype.Slot, err error) (*fencedtype.Slot, error) {
	if err == nil {
		return s, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%s slot of %q: %w", op, ref.Name, err)
	}
	return nil, d.diagnoseSlot(ctx, ref)
}

// diagnoseSlot explains why a write on ref changed nothing, from reads after
// it (driver.DiagnoseSlot).
func (d *Driver) diagnoseSlot(ctx context.Context, ref driver.SlotRef) error {
	byFence := func(fence int64) (*fencedtype.Slot, error) {
		s, err := scanSlot(d.pool.QueryRow(ctx, slotByFenceSQL, ref.Name, fence))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, nil
		}
		return s, err
	}
	var last int64
	err := d.pool.QueryRow(ctx, semFenceSQL, ref.Name).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return driver.DiagnoseSlot(ref, false, 0, nil, nil)
	}
	if err != nil {
		return fmt.Errorf("read semaphore %q: %w", ref.Name, err)
	}
	grant, err := byFence(ref.Fence)
	var newest *fencedtype.Slot
	if err == nil && grant == nil {
		newest, err = byFence(last)
	}
	if err != nil {
		return fmt.Errorf("read semaphore %q: %w", ref.Name, err)
	}
	return driver.DiagnoseSlot(ref, true, last, grant, newest)
}

// GetSemaphore implements driver.SemaphoreDriver.
func (d *Driver) GetSemaphore(ctx context.Context, name string) (*fencedtype.Semaphore, error) {
	ss, err := d.readSemaphores(ctx, getSemaphoreSQL, name)
	if err != nil {
		return nil, fmt.Errorf("get semaphore %q: %w", name, err)
	}
	if len(ss) == 0 {
		return nil, fencedtype.ErrNotFound
	}
	return ss[0], nil
}

// ListSemaphores implements driver.SemaphoreDriver.
func (d *Driver) ListSemaphores(ctx context.Context) ([]*fencedtype.Semaphore, error) {
	ss, err := d.readSemaphores(ctx, listSemaphoresSQL)
	if err != nil {
		return nil, fmt.Errorf("list semaphores: %w", err)
	}
	return ss, nil
}

func (d *Driver) readSemaphores(ctx context.Context, query string, args ...any) ([]*fencedtype.Semaphore, error) {
	rows, err := d.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	rs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (reads.SemaphoreRow, error) { return scanSemaphoreRow(r) })
	if err != nil {
		return nil, err
	}
	return reads.GroupSemaphores(rs), nil
}

// slotGuardSQL share-locks the slot row carrying the grant's fence and says
// whether the grant is current, as leaseGuardSQL does for a lease row. A
// takeover of the slot must update that row, so it waits until the
// transaction ends; a takeover committed while the guard waited moves the
// row off the fence, and the guard finds none. Parameters: name, owner,
// fence.
const slotGuardSQL = `
SELECT owner = $2 AND NOT released AND expires_at > clock_timestamp()
FROM fenced_semaphore_slots WHERE name = $1 AND fence = $3
FOR SHARE`

// SlotTx implements driver.SemaphoreDriver. fn receives a driver.Tx whose
// underlying pgx.Tx is reachable through (*Tx).Pgx.
func (d *Driver) SlotTx(ctx context.Context, ref driver.SlotRef, fn func(driver.Tx) error) error {
	err := d.pool.inTx(ctx, func(tx pgx.Tx) error {
		var current bool
		err := tx.QueryRow(ctx, slotGuardSQL, ref.Name, ref.Owner, ref.Fence).Scan(&current)
		switch {
		case errors.Is(err, pgx.ErrNoRows) || err == nil && !current:
			return errGuardFailed
		case err != nil:
			return fmt.Errorf("guard slot of %q: %w", ref.Name, err)
		}
		return fn(&Tx{tx: tx})
	})
	if errors.Is(err, errGuardFailed) {
		return d.diagnoseSlot(ctx, ref)
	}
	return err
}
