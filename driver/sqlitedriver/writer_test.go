package sqlitedriver_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// A write started inside a fenced transaction (a mistake: it waits for the
// transaction's own write lock) gives up when its context ends instead of
// wedging every writer of the process.
func TestAWriterWaitingForTheLockHonoursItsContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := fenced.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "x.db"), fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := c.AcquireLease(ctx, "a", "A", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	err = c.LeaseTx(ctx, *l, func(fenced.Tx) error {
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err := c.AcquireLease(short, "b", "A", time.Minute) // outside the tx: must wait
		return err
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("nested write = %v, want its context's deadline", err)
	}
	if _, err := c.AcquireLease(ctx, "b", "A", time.Minute); err != nil {
		t.Fatalf("writers wedged after the nested write gave up: %v", err)
	}
}
