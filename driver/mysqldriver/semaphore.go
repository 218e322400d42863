package mysqldriver

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

// An acquire is one transaction that first share-locks the fence floor and
// then creates or locks the semaphore row, so acquirers of one name follow
// each other and a new name waits for a fence advance in progress (which
// locks the floor row first, in the same order). Every later statement
// starts after those waits, so UTC_TIMESTAMP(6), the statement's start,
// is read after them; a slot row is locked before the statement that decides
// on it, as a lease grant locks its row. Reads that decide or diagnose are
// locking reads, which see the latest committed rows whatever the
// isolation level.

const (
	// semLockSQL creates the semaphore at the floor, or sets its number of
	// slots; either way it holds the row's lock until the transaction
	// ends. Parameters: name, slots, floor.
	semLockSQL = `
INSERT INTO fenced_semaphores (name, slots, fence, updated_at) VALUES (?, ?, ?, ` + now + `)
ON DUPLICATE KEY UPDATE slots = VALUES(slots), updated_at = VALUES(updated_at)`
	semFenceLockSQL = `SELECT fence FROM fenced_semaphores WHERE name = ? FOR UPDATE`

	// slotOwnedSQL finds and locks the same owner's current grant.
	// Parameters: name, owner.
	slotOwnedSQL = `
SELECT slot, fence FROM fenced_semaphore_slots FORCE INDEX (PRIMARY)
WHERE name = ? AND owner = ? AND NOT released AND expires_at > ` + now + `
ORDER BY slot LIMIT 1 FOR UPDATE`

	// slotFreeSQL picks the lowest free slot below N: never granted,
	// released, or expired. Acquirers of the name hold its semaphore row,
	// so no other grant can take the slot before this transaction does.
	// Parameters: slots, name.
	slotFreeSQL = `
WITH RECURSIVE g (slot) AS (SELECT 0 UNION ALL SELECT slot + 1 FROM g WHERE slot + 1 < ?)
SELECT g.slot FROM g
WHERE NOT EXISTS (SELECT 1 FROM fenced_semaphore_slots h
    WHERE h.name = ? AND h.slot = g.slot AND NOT h.released AND h.expires_at > ` + now + `)
ORDER BY g.slot LIMIT 1`
	// slotLockSQL locks the chosen slot's row, if it exists, before the
	// statement that decides on it. Parameters: name, slot.
	slotLockSQL = `SELECT 1 FROM fenced_semaphore_slots WHERE name = ? AND slot = ? FOR UPDATE`
	// slotTakeSQL grants an existing slot row iff it is free. Parameters:
	// owner, fence, ttl_us, name, slot.
	slotTakeSQL = `
UPDATE fenced_semaphore_slots SET owner = ?, fence = ?, expires_at = ` + now + ` + INTERVAL ? MICROSECOND,
    released = FALSE, updated_at = ` + now + `
WHERE name = ? AND slot = ? AND (released OR expires_at <= ` + now + `)`
	// slotInsertSQL grants a slot never granted before. Parameters: name,
	// slot, owner, fence, ttl_us.
	slotInsertSQL = `
INSERT INTO fenced_semaphore_slots (name, slot, owner, fence, expires_at, released, updated_at)
VALUES (?, ?, ?, ?, ` + now + ` + INTERVAL ? MICROSECOND, FALSE, ` + now + `)`
	// semBumpSQL records a grant's fence as the semaphore's last.
	semBumpSQL = `UPDATE fenced_semaphores SET fence = ? WHERE name = ?`

	// slotOfFenceSQL finds and locks the slot row carrying a fence. Rows
	// are locked in primary key order, by every statement here, never
	// through the (name, fence) index: under REPEATABLE READ a lock taken
	// through it holds the index's gaps, which a grant, moving a row to a
	// new fence, must insert into, and the two would deadlock. Parameters:
	// name, fence.
	slotOfFenceSQL = `
SELECT slot FROM fenced_semaphore_slots FORCE INDEX (PRIMARY)
WHERE name = ? AND fence = ? ORDER BY slot LIMIT 1 FOR UPDATE`
	// renewSlotSQL extends the grant, on its row locked first, iff name,
	// owner and fence match and it is unreleased and unexpired.
	// Parameters: ttl_us, name, slot, owner, fence.
	renewSlotSQL = `
UPDATE fenced_semaphore_slots SET expires_at = ` + now + ` + INTERVAL ? MICROSECOND, updated_at = ` + now + `
WHERE name = ? AND slot = ? AND owner = ? AND fence = ? AND NOT released AND expires_at > ` + now
	// releaseSlotSQL marks the grant released, on its row locked first;
	// releasing it again matches and changes nothing. Parameters: name,
	// slot, owner, fence.
	releaseSlotSQL = `
UPDATE fenced_semaphore_slots SET
    updated_at = IF(released, updated_at, ` + now + `),
    expires_at = LEAST(expires_at, ` + now + `),
    released   = TRUE
WHERE name = ? AND slot = ? AND owner = ? AND fence = ?`

	// slotWrittenSQL reads back the grant this transaction wrote (and
	// holds locked). Parameters: name, slot.
	slotWrittenSQL = `
SELECT name, slot, owner, fence, expires_at, released, updated_at
FROM fenced_semaphore_slots WHERE name = ? AND slot = ? FOR UPDATE`

	slotSelect = `
SELECT name, slot, owner, fence, expires_at, released, NOT released AND expires_at > ` + now + `, ` + now + `
FROM fenced_semaphore_slots`
	// slotByFenceSQL reads the slot row carrying a fence, locked in share
	// mode. Parameters: name, fence.
	slotByFenceSQL = slotSelect + ` FORCE INDEX (PRIMARY) WHERE name = ? AND fence = ? ORDER BY slot LIMIT 1 LOCK IN SHARE MODE`
	// slotHoldersSQL reads the grants held below N, the first to run out
	// first. Parameters: name, slots.
	slotHoldersSQL = slotSelect + `
WHERE name = ? AND slot < ? AND NOT released AND expires_at > ` + now + `
ORDER BY expires_at, slot LOCK IN SHARE MODE`
	semFenceSQL = `SELECT fence FROM fenced_semaphores WHERE name = ? LOCK IN SHARE MODE`

	// semaphoreSelect reads semaphores with their holders, one row per
	// holder (or one without a holder), in one statement.
	semaphoreSelect = `
SELECT s.name, s.slots, s.fence, ` + now + `, x.slot, x.owner, x.fence, x.expires_at
FROM fenced_semaphores s
LEFT JOIN fenced_semaphore_slots x ON x.name = s.name AND NOT x.released AND x.expires_at > ` + now
	getSemaphoreSQL   = semaphoreSelect + ` WHERE s.name = ? ORDER BY x.slot`
	listSemaphoresSQL = semaphoreSelect + ` ORDER BY s.name, x.slot`

	// slotGuardSQL share-locks the slot row iff the grant is current, as
	// leaseGuardSQL does a lease row; a takeover of the slot must update
	// that row, so it waits until the transaction ends. Parameters: name,
	// fence, owner.
	slotGuardSQL = `
SELECT 1 FROM fenced_semaphore_slots FORCE INDEX (PRIMARY)
WHERE name = ? AND fence = ? AND owner = ? AND NOT released AND expires_at > ` + now + `
LOCK IN SHARE MODE`
)

func scanSlot(row sqldb.Scanner) (*fencedtype.Slot, error) {
	var s fencedtype.Slot
	var expires, at dbTime
	if err := row.Scan(&s.Name, &s.Slot, &s.Owner, &s.Fence, &expires, &s.Released, &s.Held, &at); err != nil {
		return nil, err
	}
	s.ExpiresAt, s.DecidedAt = expires.Time, at.Time
	return &s, nil
}

func scanSemaphoreRow(row sqldb.Scanner) (reads.SemaphoreRow, error) {
	var r reads.SemaphoreRow
	var at, expires dbTime
	var slot, fence sql.NullInt64
	var owner sql.NullString
	if err := row.Scan(&r.Name, &r.Slots, &r.Fence, &at, &slot, &owner, &fence, &expires); err != nil {
		return r, err
	}
	r.DecidedAt = at.Time
	if slot.Valid {
		r.Holder = &fencedtype.Slot{Slot: int(slot.Int64), Owner: owner.String, Fence: fence.Int64, ExpiresAt: expires.Time}
	}
	return r, nil
}

// readSlotWritten reads back the grant this transaction wrote at slot;
// with ttl > 0 it was a grant or an extension, decided ttl before its
// expiry, else a release, decided at updated_at.
func readSlotWritten(ctx context.Context, tx *sql.Tx, name string, slot int, ttl time.Duration) (*fencedtype.Slot, error) {
	s := &fencedtype.Slot{}
	var expires, updated dbTime
	err := tx.QueryRowContext(ctx, slotWrittenSQL, name, slot).Scan(&s.Name, &s.Slot, &s.Owner, &s.Fence, &expires, &s.Released, &updated)
	s.ExpiresAt, s.DecidedAt = expires.Time, updated.Time
	if ttl > 0 {
		s.Held = true
		s.DecidedAt = s.ExpiresAt.Add(-time.Duration(ttl.Microseconds()) * time.Microsecond)
	}
	return s, err
}

// AcquireSlot implements driver.SemaphoreDriver.
func (d *Driver) AcquireSlot(ctx context.Context, p driver.AcquireSlotParams) (*fencedtype.Slot, error) {
	for range 100 {
		s, holders, err := d.slotTake(ctx, p)
		switch {
		case errors.Is(err, errRaced):
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

// slotTake runs one acquire: the grant, or the holders that refuse it, or
// errRaced when the chosen slot was taken after it was chosen.
func (d *Driver) slotTake(ctx context.Context, p driver.AcquireSlotParams) (s *fencedtype.Slot, holders []*fencedtype.Slot, err error) {
	us := p.TTL.Microseconds()
	err = d.inTx(ctx, func(tx *sql.Tx) error {
		s, holders = nil, nil
		var floor, last int64
		if err := tx.QueryRowContext(ctx, leaseFloorSQL).Scan(&floor); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, semLockSQL, p.Name, p.Slots, floor); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, semFenceLockSQL, p.Name).Scan(&last); err != nil {
			return err
		}
		// The same owner's current grant continues.
		var owned struct {
			slot  int
			fence int64
		}
		err := tx.QueryRowContext(ctx, slotOwnedSQL, p.Name, p.Owner).Scan(&owned.slot, &owned.fence)
		switch {
		case err == nil:
			n, err := execCount(ctx, tx, renewSlotSQL, us, p.Name, owned.slot, p.Owner, owned.fence)
			if err != nil {
				return err
			}
			if n == 0 {
				return errRaced
			}
			s, err = readSlotWritten(ctx, tx, p.Name, owned.slot, p.TTL)
			return err
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		// Else the lowest free slot, with the next fence.
		slot, err := sqldb.One(ctx, tx, sqldb.Value[int], slotFreeSQL, p.Slots, p.Name)
		if errors.Is(err, fencedtype.ErrNotFound) {
			holders, err = sqldb.All(ctx, tx, scanSlot, slotHoldersSQL, p.Name, p.Slots)
			if err == nil && len(holders) < p.Slots {
				return errRaced
			}
			return err
		}
		if err != nil {
			return err
		}
		fence := last + 1
		_, err = sqldb.One(ctx, tx, sqldb.Value[int], slotLockSQL, p.Name, slot)
		switch {
		case err == nil:
			n, err := execCount(ctx, tx, slotTakeSQL, p.Owner, fence, us, p.Name, slot)
			if err != nil {
				return err
			}
			if n == 0 {
				return errRaced
			}
		case errors.Is(err, fencedtype.ErrNotFound):
			_, err = tx.ExecContext(ctx, slotInsertSQL, p.Name, slot, p.Owner, fence, us)
			if isDuplicate(err) {
				return errRaced
			}
			if err != nil {
				return err
			}
		default:
			return err
		}
		if _, err := tx.ExecContext(ctx, semBumpSQL, fence, p.Name); err != nil {
			return err
		}
		s, err = readSlotWritten(ctx, tx, p.Name, slot, p.TTL)
		return err
	})
	return s, holders, err
}

// RenewSlot implements driver.SemaphoreDriver: the grant's row locked, then the
// conditional statement and the read-back of what it wrote, in one short
// transaction; a refusal is diagnosed after it (diagnoseSlotAfter).
func (d *Driver) RenewSlot(ctx context.Context, ref driver.SlotRef, ttl time.Duration) (*fencedtype.Slot, error) {
	return d.slotWrite(ctx, "renew", ref, ttl, func(tx *sql.Tx, slot int) (int64, error) {
		return execCount(ctx, tx, renewSlotSQL, ttl.Microseconds(), ref.Name, slot, ref.Owner, ref.Fence)
	})
}

// ReleaseSlot implements driver.SemaphoreDriver, as RenewSlot.
func (d *Driver) ReleaseSlot(ctx context.Context, ref driver.SlotRef) (*fencedtype.Slot, error) {
	return d.slotWrite(ctx, "release", ref, 0, func(tx *sql.Tx, slot int) (int64, error) {
		return execCount(ctx, tx, releaseSlotSQL, ref.Name, slot, ref.Owner, ref.Fence)
	})
}

// slotWrite locks the slot row carrying ref's fence, then runs write, the
// conditional statement, on it. No such row, or no row matched, is
// diagnosed after that transaction ends (diagnoseSlotAfter).
func (d *Driver) slotWrite(ctx context.Context, op string, ref driver.SlotRef, ttl time.Duration, write func(*sql.Tx, int) (int64, error)) (*fencedtype.Slot, error) {
	var s *fencedtype.Slot
	refused := false
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		s, refused = nil, false
		slot, err := sqldb.One(ctx, tx, sqldb.Value[int], slotOfFenceSQL, ref.Name, ref.Fence)
		var n int64
		switch {
		case err == nil:
			n, err = write(tx, slot)
		case errors.Is(err, fencedtype.ErrNotFound):
			err = nil
		}
		switch {
		case err != nil:
			return err
		case n == 0:
			refused = true
			return nil
		}
		s, err = readSlotWritten(ctx, tx, ref.Name, slot, ttl)
		return err
	})
	if err == nil && refused {
		err = d.diagnoseSlotAfter(ctx, ref)
	}
	if err != nil && !isDiagnosis(err) {
		return nil, fmt.Errorf("%s slot of %q: %w", op, ref.Name, err)
	}
	return s, err
}

// diagnoseSlotAfter diagnoses a refused write on ref in a transaction of
// its own, after the refused one ended: its locking reads take the
// semaphore row before slot rows, the order of an acquire, where reading it
// while still holding the refused statement's slot row locks could deadlock
// with one. It returns the diagnosis, or the reads' own error.
func (d *Driver) diagnoseSlotAfter(ctx context.Context, ref driver.SlotRef) error {
	var refused error
	err := d.inTx(ctx, func(tx *sql.Tx) (err error) {
		refused, err = diagnoseSlot(ctx, tx, ref)
		return err
	})
	if err != nil {
		return fmt.Errorf("read semaphore %q: %w", ref.Name, err)
	}
	return refused
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

// errSlotGuard marks a failed SlotTx guard, diagnosed after its
// transaction rolled back.
var errSlotGuard = errors.New("slot guard failed")

// SlotTx implements driver.SemaphoreDriver. fn receives a driver.Tx whose
// underlying *sql.Tx is reachable through (*Tx).SQL. It is not retried: fn
// is the caller's code. A failed guard is diagnosed after the transaction
// rolled back (diagnoseSlotAfter).
func (d *Driver) SlotTx(ctx context.Context, ref driver.SlotRef, fn func(driver.Tx) error) error {
	err := runTx(ctx, d.db, func(tx *sql.Tx) error {
		err := sqldb.Guard(ctx, tx, fmt.Sprintf("slot of %q", ref.Name), func() error { return errSlotGuard },
			slotGuardSQL, ref.Name, ref.Fence, ref.Owner)
		if err != nil {
			return err
		}
		return fn(&Tx{tx: tx})
	})
	if errors.Is(err, errSlotGuard) {
		return d.diagnoseSlotAfter(ctx, ref)
	}
	return err
}
