package fenced_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/sqlitedriver"
)

// A job enqueued inside the caller's own transaction exists only if that
// transaction commits: an order and the job that ships it are written
// together or not at all.
func ExampleClient_EnqueueTx() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fenced-example-")
	defer os.RemoveAll(dir)
	d, _ := sqlitedriver.Open(ctx, filepath.Join(dir, "fenced.db"))
	defer d.Close()
	c := fenced.New(d, fenced.Config{})
	c.Migrate(ctx)
	d.DB().ExecContext(ctx, `CREATE TABLE orders (id INTEGER PRIMARY KEY)`)

	placeOrder := func(id int, fail bool) error {
		tx, err := d.DB().BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `INSERT INTO orders (id) VALUES (?)`, id); err != nil {
			return err
		}
		_, _, err = c.EnqueueTx(ctx, sqlitedriver.WrapTx(tx), fenced.EnqueueParams{Kind: "ship", Args: map[string]int{"order": id}})
		if err != nil {
			return err
		}
		if fail {
			return errors.New("payment declined") // rolls back the order and its job
		}
		return tx.Commit()
	}
	fmt.Println("order 7:", placeOrder(7, false))
	fmt.Println("order 8:", placeOrder(8, true))

	jobs, _ := c.ListJobs(ctx, fenced.JobFilter{})
	for _, j := range jobs {
		fmt.Printf("job %d: %s %s\n", j.ID, j.Kind, j.Args)
	}

	// Output:
	// order 7: <nil>
	// order 8: payment declined
	// job 1: ship {"order":7}
}
