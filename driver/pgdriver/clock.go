package pgdriver

import (
	"context"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
)

var _ driver.Clock = (*Driver)(nil)

// DatabaseTime implements driver.Clock: clock_timestamp(), the reading every
// deciding statement uses (not now(), frozen at transaction start).
func (d *Driver) DatabaseTime(ctx context.Context) (time.Time, error) {
	var t time.Time
	if err := d.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("read database clock: %w", err)
	}
	return t, nil
}
