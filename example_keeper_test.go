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

// A Keeper holds a lease and renews it in the background; its Context ends
// when the lease is lost. Work that must not outlive the lease runs under
// that context, and still writes with the lease's fence: the keeper tells a
// holder to stop, only the fence check stops a holder that cannot hear it.
func ExampleClient_Keep() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fenced-example-")
	defer os.RemoveAll(dir)
	c, _ := fenced.Open(ctx, "sqlite:"+filepath.Join(dir, "fenced.db"), fenced.Config{})
	defer c.Close()
	c.Migrate(ctx)

	k, _ := c.Keep(ctx, "reports", "worker-a", 3*time.Second, fenced.KeepOptions{})
	held, _ := c.IsHolder(ctx, k.Lease())
	fmt.Println("A keeps fence", k.Lease().Fence, "held:", held)
	k.Release(ctx)
	fmt.Println("A released:", errors.Is(k.Err(), fenced.ErrKeeperStopped))

	k, _ = c.Keep(ctx, "reports", "worker-b", 3*time.Second, fenced.KeepOptions{RenewEvery: 50 * time.Millisecond})
	fmt.Println("B keeps fence", k.Lease().Fence)
	c.AdvanceFences(ctx, 0) // as after a restore: every current lease ends
	<-k.Context().Done()    // B's next renewal is refused
	fmt.Println("B lost it:", errors.Is(k.Err(), fenced.ErrStale))

	// Output:
	// A keeps fence 1 held: true
	// A released: true
	// B keeps fence 2
	// B lost it: true
}
