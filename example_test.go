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

// A stale holder's write is rejected once a newer generation was granted.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fenced-example-")
	defer os.RemoveAll(dir)
	c, err := fenced.Open(ctx, "sqlite:"+filepath.Join(dir, "fenced.db"), fenced.Config{})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	if _, err := c.Migrate(ctx); err != nil {
		panic(err)
	}

	a, _ := c.AcquireLease(ctx, "nightly-report", "worker-a", 50*time.Millisecond)
	fmt.Println("A holds fence", a.Fence)

	_, err = c.AcquireLease(ctx, "nightly-report", "worker-b", time.Minute)
	fmt.Println("B refused while A holds it:", errors.Is(err, fenced.ErrHeld))

	// A pauses past its TTL; B takes over with the next fence.
	var b *fenced.Lease
	for b == nil {
		time.Sleep(10 * time.Millisecond)
		b, _ = c.AcquireLease(ctx, "nightly-report", "worker-b", time.Minute)
	}
	fmt.Println("B holds fence", b.Fence)
	_, _ = c.WriteResource(ctx, "report", []byte("8"), b.Fence, fenced.WriteOptions{})

	// A wakes and writes with its old fence: rejected.
	_, err = c.WriteResource(ctx, "report", []byte("5"), a.Fence, fenced.WriteOptions{})
	var stale *fenced.StaleError
	if errors.As(err, &stale) {
		fmt.Println("A's write rejected; current fence is", stale.CurrentFence)
	}
	r, _ := c.ReadResource(ctx, "report")
	fmt.Printf("report = %s (fence %d)\n", r.Value, r.Fence)

	// Output:
	// A holds fence 1
	// B refused while A holds it: true
	// B holds fence 2
	// A's write rejected; current fence is 2
	// report = 8 (fence 2)
}

// LeaseTx protects writes to the caller's own tables.
func ExampleClient_LeaseTx() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fenced-example-")
	defer os.RemoveAll(dir)
	c, _ := fenced.Open(ctx, "sqlite:"+filepath.Join(dir, "fenced.db"), fenced.Config{})
	defer c.Close()
	c.Migrate(ctx)

	l, _ := c.AcquireLease(ctx, "billing", "worker-a", time.Minute)
	err := c.LeaseTx(ctx, *l, func(tx fenced.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE invoices (id INTEGER PRIMARY KEY, total INTEGER)`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO invoices (id, total) VALUES (?, ?)`, 1, 4200)
		return err
	})
	fmt.Println("committed under fence", l.Fence, "err:", err)

	// After a fence advance (as after a restore) the old generation is stale,
	// and nothing it tries to write commits.
	c.AdvanceFences(ctx, 0)
	err = c.LeaseTx(ctx, *l, func(tx fenced.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE invoices SET total = 0`)
		return err
	})
	fmt.Println("stale:", errors.Is(err, fenced.ErrStale))

	// Output:
	// committed under fence 1 err: <nil>
	// stale: true
}
