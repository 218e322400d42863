package mysqldriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fenced/fenced/driver"
)

// AdvanceFences statements, run in this order in one transaction. MySQL's
// LOCK TABLES would commit the transaction, so locking reads take the
// locks instead: the fence floor row first (a lease created for a new name
// share-locks it, so waits and then starts above the new floor), then every
// lease row (grants in flight finish first, later ones wait and then build
// on the new fence).
const (
	fenceLockFloorSQL  = `SELECT fence_floor FROM fenced_meta WHERE id = 1 FOR UPDATE`
	fenceLockLeasesSQL = `SELECT COALESCE(MAX(fence), 0) FROM fenced_leases FOR UPDATE`
	// Then every semaphore row (acquires in flight finish first) and every
	// slot row (open SlotTx transactions end first).
	fenceLockSemaphoresSQL = `SELECT COALESCE(MAX(fence), 0) FROM fenced_semaphores FOR UPDATE`
	fenceLockSlotsSQL      = `SELECT COUNT(*) FROM fenced_semaphore_slots FOR UPDATE`
	fenceSetFloorSQL       = `UPDATE fenced_meta SET fence_floor = ? WHERE id = 1`
	// fenceSemaphoresSQL and fenceSlotsSQL put every semaphore's next grant
	// above the floor and end every slot grant: its row moves to the floor,
	// so its holder is superseded.
	fenceSemaphoresSQL = `UPDATE fenced_semaphores SET fence = ?, updated_at = ` + now
	fenceSlotsSQL      = `
UPDATE fenced_semaphore_slots SET fence = ?, released = TRUE,
    expires_at = LEAST(expires_at, ` + now + `), updated_at = ` + now
	fenceLeasesSQL = `
UPDATE fenced_leases SET fence = ?, released = TRUE,
    expires_at = LEAST(expires_at, ` + now + `), updated_at = ` + now
	// fenceJobsSQL gives every job's next attempt a fence above any granted
	// before and ends running attempts (recovery takes them back).
	// A succeeded job has no next attempt, and its row keeps its last
	// attempt's fence (driver.WithRowAttempts).
	fenceJobsSQL = `
UPDATE fenced_jobs SET fence = fence + ?,
    lease_expires_at = CASE WHEN state = 'running' THEN LEAST(lease_expires_at, ` + now + `) END
WHERE state <> 'succeeded'`
)

// Job ids move on too, so a job lost with the newer data can never share
// its id with a new one. ALTER TABLE … AUTO_INCREMENT would commit the
// transaction, so the counter is moved by inserting placeholder jobs
// (InnoDB moves it past an explicit id, and keeps it there across restarts
// on MySQL 8 and MariaDB 10.2.4+) and deleting them again before commit:
// the first, with an automatic id, reads the counter (always above every
// id); the second takes it by further.
const (
	fencePlaceholderSQL = `
INSERT INTO fenced_jobs (id, kind, queue, args, state, run_at, max_attempts, created_at, updated_at, finished_at)
VALUES (?, 'fenced.fence-advance', 'fenced', '{}', 'cancelled', ` + now + `, 1, ` + now + `, ` + now + `, ` + now + `)`
	fenceDropSQL = `DELETE FROM fenced_jobs WHERE id IN (?, ?)`
)

// AdvanceFences implements driver.Driver.
func (d *Driver) AdvanceFences(ctx context.Context, by int64) (int64, error) {
	var floor int64
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		var top int64
		if err := tx.QueryRowContext(ctx, fenceLockFloorSQL).Scan(&floor); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, fenceLockLeasesSQL).Scan(&top); err != nil {
			return err
		}
		var semTop, slots int64
		if err := tx.QueryRowContext(ctx, fenceLockSemaphoresSQL).Scan(&semTop); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, fenceLockSlotsSQL).Scan(&slots); err != nil {
			return err
		}
		floor = max(floor, top, semTop) + by
		if _, err := tx.ExecContext(ctx, fenceSetFloorSQL, floor); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, fenceLeasesSQL, floor); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, fenceSemaphoresSQL, floor); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, fenceSlotsSQL, floor); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, fenceJobsSQL, by); err != nil {
			return err
		}
		return advanceJobIDs(ctx, tx, by)
	})
	if err != nil {
		return 0, fmt.Errorf("advance fences: %w", err)
	}
	return floor, nil
}

func advanceJobIDs(ctx context.Context, tx *sql.Tx, by int64) error {
	res, err := tx.ExecContext(ctx, fencePlaceholderSQL, nil)
	if err != nil {
		return err
	}
	counter, err := res.LastInsertId()
	if err != nil {
		return err
	}
	past := counter + by
	if _, err := tx.ExecContext(ctx, fencePlaceholderSQL, past); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, fenceDropSQL, counter, past)
	return err
}

var _ driver.FenceFloorReader = (*Driver)(nil)

// FenceFloor implements driver.FenceFloorReader.
func (d *Driver) FenceFloor(ctx context.Context) (int64, error) {
	var floor int64
	if err := d.db.QueryRowContext(ctx, `SELECT fence_floor FROM fenced_meta WHERE id = 1`).Scan(&floor); err != nil {
		return 0, fmt.Errorf("read fence floor: %w", notMigrated(err))
	}
	return floor, nil
}
