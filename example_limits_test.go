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

// A per-key limit bounds the running attempts of each concurrency key:
// with a limit of 1, a claim of three jobs of one customer takes one, and
// another customer's job is not held back by it.
func ExampleClient_SetJobLimit() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fenced-example-")
	defer os.RemoveAll(dir)
	c, _ := fenced.Open(ctx, "sqlite:"+filepath.Join(dir, "fenced.db"), fenced.Config{})
	defer c.Close()
	c.Migrate(ctx)

	c.SetJobLimit(ctx, fenced.JobLimit{Queue: "mail", PerKey: 1})
	for _, customer := range []string{"ann", "ann", "bob"} {
		c.Enqueue(ctx, fenced.EnqueueParams{Kind: "send", Queue: "mail", ConcurrencyKey: customer})
	}
	claimed, _ := c.ClaimJobs(ctx, "mail", "worker-1", 10, time.Minute)
	for _, j := range claimed {
		fmt.Printf("claimed job %d of %s\n", j.ID, j.ConcurrencyKey)
	}
	slots, _ := c.ListKeySlots(ctx, "mail")
	for _, s := range slots {
		fmt.Printf("key %s: limit %d, running %d, waiting %d\n", s.ConcurrencyKey, s.Limit, s.Running, s.Waiting)
	}

	// Output:
	// claimed job 1 of ann
	// claimed job 3 of bob
	// key ann: limit 1, running 1, waiting 1
	// key bob: limit 1, running 1, waiting 0
}

// A semaphore is N slots under one name, each grant with its own fence
// from one counter per name: two encoders hold slots at once, a third is
// refused until one releases.
func ExampleClient_AcquireSlot() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fenced-example-")
	defer os.RemoveAll(dir)
	c, _ := fenced.Open(ctx, "sqlite:"+filepath.Join(dir, "fenced.db"), fenced.Config{})
	defer c.Close()
	c.Migrate(ctx)

	a, _ := c.AcquireSlot(ctx, "encoders", "enc-a", 2, time.Minute)
	b, _ := c.AcquireSlot(ctx, "encoders", "enc-b", 2, time.Minute)
	fmt.Printf("enc-a: slot %d, fence %d; enc-b: slot %d, fence %d\n", a.Slot, a.Fence, b.Slot, b.Fence)

	_, err := c.AcquireSlot(ctx, "encoders", "enc-c", 2, time.Minute)
	fmt.Println("enc-c refused:", errors.Is(err, fenced.ErrHeld))

	c.ReleaseSlot(ctx, *a)
	cc, _ := c.AcquireSlot(ctx, "encoders", "enc-c", 2, time.Minute)
	fmt.Printf("enc-c: slot %d, fence %d\n", cc.Slot, cc.Fence)

	// Output:
	// enc-a: slot 0, fence 1; enc-b: slot 1, fence 2
	// enc-c refused: true
	// enc-c: slot 0, fence 3
}
