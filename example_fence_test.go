package fenced_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fenced/fenced"
	_ "github.com/fenced/fenced/driver/sqlitedriver"
)

// After a restore from a backup (or the promotion of an asynchronous
// replica), AdvanceFences moves every fence past any the lost copy may have
// granted: every later grant is above the new floor, names never seen
// included, and the generations current before it are stale.
func ExampleClient_AdvanceFences() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fenced-example-")
	defer os.RemoveAll(dir)
	c, _ := fenced.Open(ctx, "sqlite:"+filepath.Join(dir, "fenced.db"), fenced.Config{})
	defer c.Close()
	c.Migrate(ctx)

	before, _ := c.AcquireLease(ctx, "nightly", "worker-a", time.Minute)
	fmt.Println("before: fence", before.Fence)

	floor, _ := c.AdvanceFences(ctx, 1000)
	fmt.Println("floor:", floor)

	_, err := c.RenewLease(ctx, *before, time.Minute)
	fmt.Println("old generation stale:", errors.Is(err, fenced.ErrStale))
	again, _ := c.AcquireLease(ctx, "nightly", "worker-a", time.Minute)
	other, _ := c.AcquireLease(ctx, "weekly", "worker-a", time.Minute)
	fmt.Println("after: nightly fence", again.Fence, "weekly fence", other.Fence)

	// Output:
	// before: fence 1
	// floor: 1001
	// old generation stale: true
	// after: nightly fence 1002 weekly fence 1002
}
