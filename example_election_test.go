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

// Campaign elects one leader at a time and hands it the lease's fence. The
// leader's context ends when it loses the lease, but what keeps a deposed
// leader from doing harm is the fence on its writes: node-a's late write,
// made after node-b took over, is refused by the database.
func ExampleClient_Campaign() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fenced-example-")
	defer os.RemoveAll(dir)
	c, _ := fenced.Open(ctx, "sqlite:"+filepath.Join(dir, "fenced.db"), fenced.Config{})
	defer c.Close()
	c.Migrate(ctx)

	var a fenced.Lease
	bDone := make(chan error)
	errStepDown := errors.New("step down")
	c.Campaign(ctx, "scheduler", "node-a", 3*time.Second, fenced.CampaignOptions{Once: true},
		func(lctx context.Context, l fenced.Lease) error {
			a = l
			fmt.Println("node-a leads with fence", l.Fence)
			c.WriteResource(lctx, "schedule", []byte("by node-a"), l.Fence, fenced.WriteOptions{})
			// node-b campaigns too (with ctx, not node-a's lctx), and waits
			// while node-a leads.
			go func() {
				opts := fenced.CampaignOptions{RetryEvery: 20 * time.Millisecond}
				bDone <- c.Campaign(ctx, "scheduler", "node-b", 3*time.Second, opts,
					func(lctx context.Context, l fenced.Lease) error {
						fmt.Println("node-b leads with fence", l.Fence)
						c.WriteResource(lctx, "schedule", []byte("by node-b"), l.Fence, fenced.WriteOptions{})
						_, err := c.WriteResource(lctx, "schedule", []byte("late, by node-a"), a.Fence, fenced.WriteOptions{})
						fmt.Println("node-a's late write refused:", errors.Is(err, fenced.ErrStale))
						return errStepDown
					})
			}()
			return nil // node-a's term ends: the lease is released at once
		})
	fmt.Println("node-b's campaign ended:", errors.Is(<-bDone, errStepDown))
	leader, _ := c.Leader(ctx, "scheduler")
	r, _ := c.ReadResource(ctx, "schedule")
	fmt.Printf("leader now: %v; schedule = %s\n", leader, r.Value)

	// Output:
	// node-a leads with fence 1
	// node-b leads with fence 2
	// node-a's late write refused: true
	// node-b's campaign ended: true
	// leader now: <nil>; schedule = by node-b
}
