package pgdriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/fenced/fenced/driver/drivertest"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/internal/test/testdb"
	"github.com/jackc/pgx/v5"
)

// TestBackoffExpressionDoesNotOverflow evaluates the driver's one backoff
// expression for attempts 1 to 2000 (the rule: drivertest).
func TestBackoffExpressionDoesNotOverflow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testdb.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	drivertest.CheckBackoffExpression(t, func(t *testing.T, base, max time.Duration, n int) []time.Duration {
		rows, err := conn.Query(ctx, `SELECT `+pgdriver.BackoffUS("a", "$1", "$2", "0")+
			` FROM generate_series(1, $3::int) AS g(a) ORDER BY a`, base.Microseconds(), max.Microseconds(), n)
		if err != nil {
			t.Fatal(err)
		}
		us, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatal(err)
		}
		out := make([]time.Duration, len(us))
		for i, u := range us {
			out[i] = time.Duration(u) * time.Microsecond
		}
		return out
	})
}
