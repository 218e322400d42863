package pgdriver

import (
	"context"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/jackc/pgx/v5"
)

// AdvanceFences implements driver.Driver.
func (d *Driver) AdvanceFences(ctx context.Context, by int64) (int64, error) {
	var floor int64
	err := d.pool.inTx(ctx, func(tx pgx.Tx) (err error) {
		floor, err = advanceFences(ctx, tx, by)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("advance fences: %w", err)
	}
	return floor, nil
}

// advanceFences raises the floor by `by` inside tx and returns it.
func advanceFences(ctx context.Context, tx pgx.Tx, by int64) (int64, error) {
	sems, err := lockFenceTables(ctx, tx)
	if err != nil {
		return 0, err
	}
	return raiseFences(ctx, tx, by, sems)
}

// lockFenceTables takes the lock an advance holds, on every table that
// holds fences: concurrent grants wait for the advance, so none can slip in
// under the old floor; a second advance waits for the first and builds on
// its floor. It reports whether the semaphore tables exist: a database not
// yet migrated to them (a promotion found by a connection before the
// migration ran) is advanced without them.
func lockFenceTables(ctx context.Context, tx pgx.Tx) (sems bool, err error) {
	if err := tx.QueryRow(ctx, `SELECT to_regclass('fenced_semaphores') IS NOT NULL`).Scan(&sems); err != nil {
		return false, err
	}
	tables := "fenced_meta, fenced_leases, fenced_jobs"
	if sems {
		tables = "fenced_meta, fenced_leases, fenced_semaphores, fenced_semaphore_slots, fenced_jobs"
	}
	_, err = tx.Exec(ctx, `LOCK TABLE `+tables+` IN EXCLUSIVE MODE`)
	return sems, err
}

// raiseFences raises the floor by `by` inside tx, which holds
// lockFenceTables's lock, and returns it.
func raiseFences(ctx context.Context, tx pgx.Tx, by int64, sems bool) (int64, error) {
	var floor int64
	semTop := "0"
	if sems {
		semTop = "(SELECT COALESCE(max(fence), 0) FROM fenced_semaphores)"
	}
	err := tx.QueryRow(ctx, `
		UPDATE fenced_meta SET fence_floor =
			GREATEST(fence_floor, (SELECT COALESCE(max(fence), 0) FROM fenced_leases), `+semTop+`) + $1
		RETURNING fence_floor`, by).Scan(&floor)
	if err != nil {
		return 0, err
	}
	if _, err = tx.Exec(ctx, `
		UPDATE fenced_leases SET fence = $1, released = true,
			expires_at = LEAST(expires_at, clock_timestamp()), updated_at = clock_timestamp()`, floor); err != nil {
		return 0, err
	}
	// Every semaphore's next grant is above the floor, and every slot grant
	// ends: its row moves to the floor, so its holder is superseded.
	if sems {
		if _, err = tx.Exec(ctx, `UPDATE fenced_semaphores SET fence = $1, updated_at = clock_timestamp()`, floor); err != nil {
			return 0, err
		}
		if _, err = tx.Exec(ctx, `
			UPDATE fenced_semaphore_slots SET fence = $1, released = true,
				expires_at = LEAST(expires_at, clock_timestamp()), updated_at = clock_timestamp()`, floor); err != nil {
			return 0, err
		}
	}
	// Every job's next attempt gets a fence above any granted before, and
	// running attempts end (recovery takes them back). A succeeded job has
	// no next attempt (nothing moves it out of succeeded), and its row
	// keeps its last attempt's fence (driver.WithRowAttempts). Job ids move
	// on too, so a job lost with the newer data can never share its id
	// with a new one.
	if _, err = tx.Exec(ctx, `
		UPDATE fenced_jobs SET fence = fence + $1,
			lease_expires_at = CASE WHEN state = 'running' THEN LEAST(lease_expires_at, clock_timestamp()) END
		WHERE state <> 'succeeded'`, by); err != nil {
		return 0, err
	}
	_, err = tx.Exec(ctx, `SELECT setval(s.seq, GREATEST(
			COALESCE(pg_sequence_last_value(s.seq), 0), (SELECT COALESCE(max(id), 0) FROM fenced_jobs)) + $1)
		FROM (SELECT pg_get_serial_sequence('fenced_jobs', 'id')::regclass AS seq) s`, by)
	return floor, err
}

var _ driver.FenceFloorReader = (*Driver)(nil)

// FenceFloor implements driver.FenceFloorReader.
func (d *Driver) FenceFloor(ctx context.Context) (int64, error) {
	var floor int64
	if err := d.pool.QueryRow(ctx, `SELECT fence_floor FROM fenced_meta`).Scan(&floor); err != nil {
		return 0, fmt.Errorf("read fence floor: %w", err)
	}
	return floor, nil
}
