package sqlitedriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/fenced/fenced/driver/drivertest"
	"github.com/fenced/fenced/driver/sqlitedriver"
	"github.com/fenced/fenced/internal/test/testdb"
)

// TestBackoffExpressionDoesNotOverflow evaluates the driver's one backoff
// expression for attempts 1 to 2000 (the rule: drivertest).
func TestBackoffExpressionDoesNotOverflow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := openDriver(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	db := d.(*sqlitedriver.Driver).DB()
	drivertest.CheckBackoffExpression(t, func(t *testing.T, base, max time.Duration, n int) []time.Duration {
		rows, err := db.QueryContext(ctx, `WITH RECURSIVE g(a) AS (SELECT 1 UNION ALL SELECT a + 1 FROM g WHERE a < ?3)
			SELECT `+sqlitedriver.BackoffUS("a", "?1", "?2", "0")+` FROM g ORDER BY a`, base.Microseconds(), max.Microseconds(), n)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []time.Duration
		for rows.Next() {
			var us int64
			if err := rows.Scan(&us); err != nil {
				t.Fatal(err)
			}
			out = append(out, time.Duration(us)*time.Microsecond)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	})
}
