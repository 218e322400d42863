package sqlitedriver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/sqlitedriver"
	"github.com/fenced/fenced/fencedtype"
)

// TestInMemoryDatabaseIsRefused: SQLite gives every connection of
// ":memory:" (and of "", a temporary file) a database of its own, and the
// driver keeps a pool of them. Accepted, a lease was granted twice: each
// connection migrated its own schema and granted fence 1 to another owner.
func TestInMemoryDatabaseIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, path := range []string{":memory:", ""} {
		d, err := sqlitedriver.Open(ctx, path)
		if errors.Is(err, fencedtype.ErrInvalid) {
			continue
		}
		if err != nil {
			t.Fatalf("open %q: %v", path, err)
		}
		defer d.Close()
		if _, err := d.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		first, err := d.DB().Conn(ctx) // the pool's one connection, held
		if err != nil {
			t.Fatal(err)
		}
		if v, err := d.Migrate(ctx); err != nil || len(v) != 0 {
			t.Errorf("open %q: migrated again on another connection: %v, %v", path, v, err)
		}
		a, errA := d.AcquireLease(ctx, driver.AcquireLeaseParams{Name: "x", Owner: "A", TTL: time.Minute})
		second, err := d.DB().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		first.Close()
		b, errB := d.AcquireLease(ctx, driver.AcquireLeaseParams{Name: "x", Owner: "B", TTL: time.Minute})
		second.Close()
		if errA == nil && errB == nil {
			t.Errorf("open %q: lease granted to A (fence %d) and to B (fence %d) at once", path, a.Fence, b.Fence)
		}
	}
}
