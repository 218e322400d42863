package fenced_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fenced/fenced"
	_ "github.com/fenced/fenced/driver/sqlitedriver"
)

// A write that carries an operation id is applied once: repeating it (a
// retry after a lost reply) returns the first outcome, and applies nothing.
// A write with a fence below the stored one is refused.
func ExampleClient_WriteResource() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fenced-example-")
	defer os.RemoveAll(dir)
	c, _ := fenced.Open(ctx, "sqlite:"+filepath.Join(dir, "fenced.db"), fenced.Config{})
	defer c.Close()
	c.Migrate(ctx)

	opts := fenced.WriteOptions{OperationID: "publish-2026-11-29"}
	for range 2 {
		w, err := c.WriteResource(ctx, "report", []byte("draft"), 3, opts)
		fmt.Printf("version %d, replayed %v, err %v\n", w.Version, w.Replayed, err)
	}
	_, err := c.WriteResource(ctx, "report", []byte("late"), 2, fenced.WriteOptions{})
	var stale *fenced.StaleError
	if errors.As(err, &stale) {
		fmt.Printf("fence %d refused: the stored fence is %d\n", stale.Fence, stale.CurrentFence)
	}
	r, _ := c.ReadResource(ctx, "report")
	fmt.Printf("report = %s (fence %d, version %d)\n", r.Value, r.Fence, r.Version)

	// Output:
	// version 1, replayed false, err <nil>
	// version 1, replayed true, err <nil>
	// fence 2 refused: the stored fence is 3
	// report = draft (fence 3, version 1)
}
