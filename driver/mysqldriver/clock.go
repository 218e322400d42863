package mysqldriver

import (
	"context"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
)

var _ driver.Clock = (*Driver)(nil)

// DatabaseTime implements driver.Clock. It reads the database clock in a
// statement of its own:
// UTC_TIMESTAMP(6), the reading every deciding statement uses. It decides
// nothing (see driver.Clock).
func (d *Driver) DatabaseTime(ctx context.Context) (time.Time, error) {
	var t dbTime
	if err := d.db.QueryRowContext(ctx, `SELECT `+now).Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("read database clock: %w", err)
	}
	return t.Time, nil
}
