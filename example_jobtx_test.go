package fenced_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/sqlitedriver"
)

// invoiceArgs are the arguments of an "invoice" job.
type invoiceArgs struct {
	Order int `json:"order"`
	Total int `json:"total"`
}

// A handler writes its business row and completes its job in one
// transaction, which commits only while its attempt is current: if the
// attempt was taken over meanwhile, neither the row nor the completion
// commits.
func ExampleJobRun_Tx() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fenced-example-")
	defer os.RemoveAll(dir)
	d, _ := sqlitedriver.Open(ctx, filepath.Join(dir, "fenced.db"))
	defer d.Close()
	c := fenced.New(d, fenced.Config{})
	c.Migrate(ctx)
	d.DB().ExecContext(ctx, `CREATE TABLE invoices (order_id INTEGER PRIMARY KEY, total INTEGER NOT NULL)`)

	job, _, _ := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "invoice", Args: invoiceArgs{Order: 42, Total: 990}})

	w, _ := c.NewWorker(fenced.WorkerConfig{Owner: "worker-1"})
	w.Handle("invoice", fenced.HandleArgs(func(ctx context.Context, j *fenced.JobRun, a invoiceArgs) error {
		return j.Tx(ctx, func(tx fenced.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO invoices (order_id, total) VALUES (?, ?)`, a.Order, a.Total); err != nil {
				return err
			}
			return j.CompleteTx(ctx, tx, map[string]int{"invoiced": a.Order})
		})
	}))
	w.Start(ctx)
	j := waitFinished(ctx, c, job.ID)
	stop, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	w.Stop(stop)

	var order, total int
	d.DB().QueryRowContext(ctx, `SELECT order_id, total FROM invoices`).Scan(&order, &total)
	fmt.Printf("invoice for order %d: %d\n", order, total)
	fmt.Printf("job %d: %s, output %s\n", j.ID, j.State, j.Output)

	// Output:
	// invoice for order 42: 990
	// job 1: succeeded, output {"invoiced":42}
}
