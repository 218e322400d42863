package mysqldriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/fenced/fenced/driver/drivertest"
	"github.com/fenced/fenced/driver/mysqldriver"
	"github.com/fenced/fenced/internal/test/testdb"
)

// TestBackoffExpressionDoesNotOverflow evaluates the driver's one backoff
// expression for attempts 1 to 2000 (the rule: drivertest). The attempts
// are made by joining digits: MySQL 8 stops a recursive CTE at 1000 rows.
func TestBackoffExpressionDoesNotOverflow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := mysqldriver.Open(ctx, testdb.MySQL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const digits = `(SELECT 0 AS x UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
		UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)`
	drivertest.CheckBackoffExpression(t, func(t *testing.T, base, max time.Duration, n int) []time.Duration {
		// backoffUS takes its ? arguments in the order max, base.
		rows, err := d.DB().QueryContext(ctx, `SELECT `+mysqldriver.BackoffUS("g.a", "?", "?", "0")+` FROM (
			SELECT 1 + a.x + 10 * b.x + 100 * c.x + 1000 * e.x AS a
			FROM `+digits+` a, `+digits+` b, `+digits+` c, `+digits+` e) g
			WHERE g.a <= ? ORDER BY g.a`, max.Microseconds(), base.Microseconds(), n)
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
