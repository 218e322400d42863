package pgdriver

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// FenceAdvance implements driver.Driver. The table lock makes concurrent
// grants wait, so none can slip in under the old floor.
func (d *Driver) FenceAdvance(ctx context.Context, by int64) (int64, error) {
	var floor int64
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE fenced_meta, fenced_leases IN EXCLUSIVE MODE`); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `
			UPDATE fenced_meta SET fence_floor =
				GREATEST(fence_floor, (SELECT COALESCE(max(fence), 0) FROM fenced_leases)) + $1
			RETURNING fence_floor`, by).Scan(&floor)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			UPDATE fenced_leases SET fence = $1, released = true,
				expires_at = LEAST(expires_at, clock_timestamp()), updated_at = clock_timestamp()`, floor)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("advance fences: %w", err)
	}
	return floor, nil
}
