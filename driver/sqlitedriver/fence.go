package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fenced/fenced/driver"
)

// advanceFencesJobsSQL gives every job's next attempt a fence above any
// granted before and ends running attempts (recovery takes them back).
// A succeeded job has no next attempt, and its row keeps its last
// attempt's fence (driver.WithRowAttempts).
const advanceFencesJobsSQL = `
UPDATE fenced_jobs SET fence = fence + ?1,
    lease_expires_us = CASE WHEN state = 'running' THEN MIN(lease_expires_us, ` + nowUS + `) END
WHERE state <> 'succeeded'`

// advanceFencesSemaphoresSQL and advanceFencesSlotsSQL put every
// semaphore's next grant above the floor and end every slot grant: its row
// moves to the floor, so its holder is superseded.
const (
	advanceFencesSemaphoresSQL = `UPDATE fenced_semaphores SET fence = ?1, updated_us = ` + nowUS
	advanceFencesSlotsSQL      = `
UPDATE fenced_semaphore_slots SET fence = ?1, released = 1,
    expires_us = MIN(expires_us, ` + nowUS + `), updated_us = ` + nowUS
)

// advanceFencesJobIDsSQL moves the job id sequence past both its last value
// and the largest id by by, so a job lost with newer data can never share
// its id with a new one. sqlite_sequence has no row for fenced_jobs before
// the first insert (fenceSeqRowSQL adds it), and no unique key on name to
// upsert on.
const (
	fenceSeqRowSQL = `
INSERT INTO sqlite_sequence (name, seq)
SELECT 'fenced_jobs', 0 WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'fenced_jobs')`
	advanceFencesJobIDsSQL = `
UPDATE sqlite_sequence SET seq = MAX(seq, (SELECT COALESCE(max(id), 0) FROM fenced_jobs)) + ?1
WHERE name = 'fenced_jobs'`
)

// AdvanceFences implements driver.Driver, in one write transaction.
func (d *Driver) AdvanceFences(ctx context.Context, by int64) (int64, error) {
	var floor int64
	err := d.writeTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `
			UPDATE fenced_meta SET fence_floor =
				MAX(fence_floor, (SELECT COALESCE(max(fence), 0) FROM fenced_leases),
					(SELECT COALESCE(max(fence), 0) FROM fenced_semaphores)) + ?1
			RETURNING fence_floor`, by).Scan(&floor)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `
			UPDATE fenced_leases SET fence = ?1, released = 1,
				expires_us = MIN(expires_us, `+nowUS+`), updated_us = `+nowUS, floor)
		if err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, advanceFencesSemaphoresSQL, floor); err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, advanceFencesSlotsSQL, floor); err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, advanceFencesJobsSQL, by); err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, fenceSeqRowSQL); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, advanceFencesJobIDsSQL, by)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("advance fences: %w", err)
	}
	return floor, nil
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
