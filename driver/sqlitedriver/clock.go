package sqlitedriver

import (
	"context"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
)

var _ driver.Clock = (*Driver)(nil)

// DatabaseTime implements driver.Clock: the host clock read in a statement, as
// every deciding statement reads it.
func (d *Driver) DatabaseTime(ctx context.Context) (time.Time, error) {
	var us int64
	if err := d.db.QueryRowContext(ctx, `SELECT `+nowUS).Scan(&us); err != nil {
		return time.Time{}, fmt.Errorf("read database clock: %w", err)
	}
	return usTime(us), nil
}
