package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/fenced/fenced/driver/internal/reads"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

var _ driver.SemaphoreDriver = (*Driver)(nil)

// Every semaphore write is an IMMEDIATE transaction: it holds the database's
// one write lock from its first statement, so acquirers follow each other
// and the statements of one acquire see no other writer between them. Each
// decision is still a conditional statement, judged by the clock read in it.

// semLockSQL creates the semaphore at the fence floor, or sets its number of
// slots. Parameters: name, slots.
const semLockSQL = `
INSERT INTO fenced_semaphores (name, slots, fence, updated_us)
SELECT ?1, ?2, m.fence_floor, ` + nowUS + ` FROM fenced_meta m WHERE true
ON CONFLICT (name) DO UPDATE SET slots = excluded.slots, updated_us = excluded.updated_us`

// slotExtendSQL extends the same owner's current grant keeping its fence.
// Parameters: name, owner, ttl_us.
const slotExtendSQL = `
UPDATE fenced_semaphore_slots SET expires_us = n.t + ?3, updated_us = n.t
FROM (SELECT ` + nowUS + ` AS t) n
WHERE name = ?1 AND owner = ?2 AND NOT released AND expires_us > n.t
RETURNING name, slot, owner, fence, expires_us, released, 1, updated_us`

// slotGrantSQL grants the lowest free slot below N — never granted,
// released, or expired by the database clock — with the fence after the
// semaphore's last; the DO UPDATE re-checks that the slot is free.
// Parameters: name, owner, slots, ttl_us.
const slotGrantSQL = `
WITH RECURSIVE g(slot) AS (SELECT 0 UNION ALL SELECT slot + 1 FROM g WHERE slot + 1 < ?3)
INSERT INTO fenced_semaphore_slots AS x (name, slot, owner, fence, expires_us, released, updated_us)
SELECT ?1, g.slot, ?2, s.fence + 1, n.t + ?4, 0, n.t
FROM g, fenced_semaphores s, (SELECT ` + nowUS + ` AS t) n
WHERE s.name = ?1 AND NOT EXISTS (
    SELECT 1 FROM fenced_semaphore_slots h
    WHERE h.name = ?1 AND h.slot = g.slot AND NOT h.released AND h.expires_us > n.t)
ORDER BY g.slot LIMIT 1
ON CONFLICT (name, slot) DO UPDATE SET
    owner = excluded.owner, fence = excluded.fence, expires_us = excluded.expires_us,
    released = 0, updated_us = excluded.updated_us
WHERE x.released OR x.expires_us <= excluded.updated_us
RETURNING name, slot, owner, fence, expires_us, released, 1, updated_us`

// semBumpSQL records a grant's fence as the semaphore's last.
const semBumpSQL = `UPDATE fenced_semaphores SET fence = ?2 WHERE name = ?1`

// renewSlotSQL extends the grant iff name, owner and fence match and it is
// unreleased and unexpired. Parameters: name, owner, fence, ttl_us.
const renewSlotSQL = `
UPDATE fenced_semaphore_slots SET expires_us = n.t + ?4, updated_us = n.t
FROM (SELECT ` + nowUS + ` AS t) n
WHERE name = ?1 AND owner = ?2 AND fence = ?3 AND NOT released AND expires_us > n.t
RETURNING name, slot, owner, fence, expires_us, released, 1, updated_us`

// releaseSlotSQL marks the grant released; matching an already released
// grant again is success. Parameters: name, owner, fence.
const releaseSlotSQL = `
UPDATE fenced_semaphore_slots SET released = 1, expires_us = MIN(expires_us, n.t),
    updated_us = CASE WHEN released THEN updated_us ELSE n.t END
FROM (SELECT ` + nowUS + ` AS t) n
WHERE name = ?1 AND owner = ?2 AND fence = ?3
RETURNING name, slot, owner, fence, expires_us, released, 0, updated_us`

const slotSelect = `
SELECT x.name, x.slot, x.owner, x.fence, x.expires_us, x.released, NOT x.released AND x.expires_us > n.t, n.t
FROM fenced_semaphore_slots x, (SELECT ` + nowUS + ` AS t) n`

// slotByFenceSQL reads the slot row carrying a fence. Parameters: name, fence.
const slotByFenceSQL = slotSelect + ` WHERE x.name = ?1 AND x.fence = ?2 ORDER BY x.slot LIMIT 1`

// slotHoldersSQL reads the grants held below N, the first to run out first.
const slotHoldersSQL = slotSelect + `
WHERE x.name = ?1 AND x.slot < ?2 AND NOT x.released AND x.expires_us > n.t
ORDER BY x.expires_us, x.slot`

const semFenceSQL = `SELECT fence FROM fenced_semaphores WHERE name = ?1`

// semaphoreSelect reads semaphores with their holders, one row per holder
// (or one without a holder), in one statement.
const semaphoreSelect = `
SELECT s.name, s.slots, s.fence, n.t, x.slot, x.owner, x.fence, x.expires_us
FROM fenced_semaphores s CROSS JOIN (SELECT ` + nowUS + ` AS t) n
LEFT JOIN fenced_semaphore_slots x ON x.name = s.name AND NOT x.released AND x.expires_us > n.t`

const (
	getSemaphoreSQL   = semaphoreSelect + ` WHERE s.name = ?1 ORDER BY x.slot`
	listSemaphoresSQL = semaphoreSelect + ` ORDER BY s.name, x.slot`
)

// slotGuardSQL checks that the grant is current. Run as the first statement
// of an IMMEDIATE transaction it holds SQLite's write lock, so a takeover
// waits until the transaction ends. Parameters: name, owner, fence.
const slotGuardSQL = `
SELECT 1 FROM fenced_semaphore_slots
WHERE name = ?1 AND fence = ?3 AND owner = ?2 AND NOT released AND expires_us > ` + nowUS

func scanSlot(row sqldb.Scanner) (*fencedtype.Slot, error) {
	var s fencedtype.Slot
	var expires, now int64
	if err := row.Scan(&s.Name, &s.Slot, &s.Owner, &s.Fence, &expires, &s.Released, &s.Held, &now); err != nil {
		return nil, err
	}
	s.ExpiresAt, s.DecidedAt = time.UnixMicro(expires).UTC(), time.UnixMicro(now).UTC()
	return &s, nil
}

func scanSemaphoreRow(row sqldb.Scanner) (reads.SemaphoreRow, error) {
	var r reads.SemaphoreRow
	var now int64
	var slot, fence, expires sql.NullInt64
	var owner sql.NullString
	if err := row.Scan(&r.Name, &r.Slots, &r.Fence, &now, &slot, &owner, &fence, &expires); err != nil {
		return r, err
	}
	r.DecidedAt = time.UnixMicro(now).UTC()
	if slot.Valid {
		r.Holder = &fencedtype.Slot{Slot: int(slot.Int64), Owner: owner.String, Fence: fence.Int64, ExpiresAt: time.UnixMicro(expires.Int64).UTC()}
	}
	return r, nil
}

// AcquireSlot implements driver.SemaphoreDriver, in one write transaction.
func (d *Driver) AcquireSlot(ctx context.Context, p driver.AcquireSlotParams) (*fencedtype.Slot, error) {
	var s *fencedtype.Slot
	var holders []*fencedtype.Slot
	err := d.writeTx(ctx, func(tx *sql.Tx) (err error) {
		if _, err = tx.ExecContext(ctx, semLockSQL, p.Name, p.Slots); err != nil {
			return err
		}
		us := p.TTL.Microseconds()
		s, err = scanSlot(tx.QueryRowContext(ctx, slotExtendSQL, p.Name, p.Owner, us))
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		s, err = scanSlot(tx.QueryRowContext(ctx, slotGrantSQL, p.Name, p.Owner, p.Slots, us))
		if err == nil {
			_, err = tx.ExecContext(ctx, semBumpSQL, p.Name, s.Fence)
			return err
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		s = nil
		holders, err = sqldb.All(ctx, tx, scanSlot, slotHoldersSQL, p.Name, p.Slots)
		return err
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("acquire slot of %q: %w", p.Name, err)
	case s != nil:
		return s, nil
	}
	return nil, driver.SlotsHeld(p.Name, p.Slots, holders)
}

// RenewSlot implements driver.SemaphoreDriver.
func (d *Driver) RenewSlot(ctx context.Context, ref driver.SlotRef, ttl time.Duration) (*fencedtype.Slot, error) {
	return d.slotWrite(ctx, "renew", ref, renewSlotSQL, ref.Name, ref.Owner, ref.Fence, ttl.Microseconds())
}

// ReleaseSlot implements driver.SemaphoreDriver.
func (d *Driver) ReleaseSlot(ctx context.Context, ref driver.SlotRef) (*fencedtype.Slot, error) {
	return d.slotWrite(ctx, "release", ref, releaseSlotSQL, ref.Name, ref.Owner, ref.Fence)
}

// slotWrite runs one conditional slot statement; zero rows becomes the
// diagnosed typed error, from reads in the same write transaction.
func (d *Driver) slotWrite(ctx context.Context, op string, ref driver.SlotRef, query string, args ...any) (*fencedtype.Slot, error) {
	var s *fencedtype.Slot
	var refused error
	err := d.writeTx(ctx, func(tx *sql.Tx) (err error) {
		s, err = scanSlot(tx.QueryRowContext(ctx, query, args...))
		if errors.Is(err, sql.ErrNoRows) {
			refused, err = diagnoseSlot(ctx, tx, ref)
		}
		return err
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s slot of %q: %w", op, ref.Name, err)
	case refused != nil:
		return nil, refused
	}
	return s, nil
}

// slotQueries are this backend's statements of the shared semaphore reads.
var slotQueries = sqldb.SlotQueries{
	LastFence: semFenceSQL, SlotByFence: slotByFenceSQL, ScanSlot: scanSlot,
	Get: getSemaphoreSQL, List: listSemaphoresSQL, ScanRow: scanSemaphoreRow,
}

// diagnoseSlot reads, through q, why a write on ref changed nothing
// (sqldb.SlotQueries.DiagnoseSlot).
func diagnoseSlot(ctx context.Context, q sqldb.Querier, ref driver.SlotRef) (refused, err error) {
	return slotQueries.DiagnoseSlot(ctx, q, ref)
}

// GetSemaphore implements driver.SemaphoreDriver.
func (d *Driver) GetSemaphore(ctx context.Context, name string) (*fencedtype.Semaphore, error) {
	s, err := slotQueries.GetSemaphore(ctx, d.db, name)
	return s, notMigrated(err)
}

// ListSemaphores implements driver.SemaphoreDriver.
func (d *Driver) ListSemaphores(ctx context.Context) ([]*fencedtype.Semaphore, error) {
	ss, err := slotQueries.ListSemaphores(ctx, d.db)
	return ss, notMigrated(err)
}

// SlotTx implements driver.SemaphoreDriver. fn receives a driver.Tx whose underlying
// *sql.Tx is reachable through (*Tx).SQL. A failed guard is diagnosed
// inside the same transaction, then rolled back.
func (d *Driver) SlotTx(ctx context.Context, ref driver.SlotRef, fn func(driver.Tx) error) error {
	return d.writeTx(ctx, func(tx *sql.Tx) error {
		err := sqldb.Guard(ctx, tx, fmt.Sprintf("slot of %q", ref.Name), func() error {
			refused, err := diagnoseSlot(ctx, tx, ref)
			if err != nil {
				return err
			}
			return refused
		}, slotGuardSQL, ref.Name, ref.Owner, ref.Fence)
		if err != nil {
			return err
		}
		return fn(&Tx{tx: tx})
	})
}
