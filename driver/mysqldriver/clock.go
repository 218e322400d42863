package mysqldriver

import (
	"context"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/sqldb"
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

// clockAsInsertID is the condition a deciding UPDATE ends its WHERE with to
// hand back its clock reading: LAST_INSERT_ID(expr) sets the value the OK
// packet carries (microseconds since the epoch) and is true. UTC_TIMESTAMP(6)
// holds for a whole statement, so it is the reading every row's guard and
// every assignment of the statement used.
const clockAsInsertID = `LAST_INSERT_ID(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ` + now + `)) > 0`

// execAt runs an UPDATE ending with clockAsInsertID and returns the rows it
// matched and, when it matched any, its clock reading.
func execAt(ctx context.Context, q sqldb.Querier, query string, args ...any) (int64, time.Time, error) {
	res, err := q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, time.Time{}, err
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return n, time.Time{}, err
	}
	us, err := res.LastInsertId()
	if err != nil {
		return 0, time.Time{}, err
	}
	return n, time.UnixMicro(us).UTC(), nil
}
