package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"
)

// FenceAdvance implements driver.Driver, in one write transaction.
func (d *Driver) FenceAdvance(ctx context.Context, by int64) (int64, error) {
	var floor int64
	err := d.writeTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `
			UPDATE fenced_meta SET fence_floor =
				MAX(fence_floor, (SELECT COALESCE(max(fence), 0) FROM fenced_leases)) + ?1
			RETURNING fence_floor`, by).Scan(&floor)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `
			UPDATE fenced_leases SET fence = ?1, released = 1,
				expires_us = MIN(expires_us, `+nowUS+`), updated_us = `+nowUS, floor)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("advance fences: %w", err)
	}
	return floor, nil
}
