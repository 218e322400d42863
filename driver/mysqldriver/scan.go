package mysqldriver

import (
	"fmt"
	"strings"
	"time"
)

// dbTime scans a DATETIME(6) column, which holds UTC. The driver's own
// connections parse times in UTC; a caller's connection (WrapTx) may parse
// them in another location, or not at all, so the wall-clock reading is
// taken as UTC either way.
type dbTime struct {
	Time  time.Time
	Valid bool // false for NULL
}

// datetimeLayout is how DATETIME(6) values are written and read as text.
const datetimeLayout = "2006-01-02 15:04:05.999999"

func (t *dbTime) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*t = dbTime{}
		return nil
	case time.Time:
		*t = dbTime{time.Date(v.Year(), v.Month(), v.Day(), v.Hour(), v.Minute(), v.Second(), v.Nanosecond(), time.UTC), true}
		return nil
	case []byte:
		return t.parse(string(v))
	case string:
		return t.parse(v)
	}
	return fmt.Errorf("mysqldriver: cannot scan %T into a time", src)
}

func (t *dbTime) parse(s string) error {
	v, err := time.Parse(datetimeLayout, s)
	if err != nil {
		return fmt.Errorf("mysqldriver: time %q: %w", s, err)
	}
	*t = dbTime{v, true}
	return nil
}

// ptr is the time, or nil for NULL.
func (t dbTime) ptr() *time.Time {
	if !t.Valid {
		return nil
	}
	v := t.Time
	return &v
}

// timeArg is t as a DATETIME(6) literal in UTC, independent of the
// connection's loc setting.
func timeArg(t time.Time) string { return t.UTC().Format(datetimeLayout) }

// placeholders returns n comma-separated ? placeholders.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// pairPlaceholders returns n comma-separated (?, ?) row constructors.
func pairPlaceholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("(?, ?), ", n), ", ")
}
