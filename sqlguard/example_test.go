package sqlguard_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fenced/fenced"
	_ "github.com/fenced/fenced/driver/sqlitedriver" // fenced's sqlite: backend
	"github.com/fenced/fenced/sqlguard"
	_ "modernc.org/sqlite" // database/sql's "sqlite" driver, for the user's table
)

// A lease's fence guards a row of the user's own table: the row keeps the
// fence of its last guarded update, and an update under an older fence is
// refused by the UPDATE itself. The leases live in one database (here a
// fenced SQLite file) and the table in another (here a second SQLite
// file; PostgreSQL and MySQL alike).
func ExampleTable_Update() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fenced-example-")
	defer os.RemoveAll(dir)
	c, _ := fenced.Open(ctx, "sqlite:"+filepath.Join(dir, "fenced.db"), fenced.Config{})
	defer c.Close()
	c.Migrate(ctx)

	db, _ := sql.Open("sqlite", filepath.Join(dir, "app.db"))
	defer db.Close()
	db.ExecContext(ctx, `CREATE TABLE invoices (id INTEGER PRIMARY KEY, status TEXT, fence INTEGER NOT NULL DEFAULT 0)`)
	db.ExecContext(ctx, `INSERT INTO invoices (id, status) VALUES (42, 'new')`)
	invoices := sqlguard.Table{Dialect: sqlguard.SQLite, Name: "invoices", KeyColumn: "id", FenceColumn: "fence"}

	a, _ := c.AcquireLease(ctx, "invoice-42", "worker-a", 50*time.Millisecond)
	err := invoices.Update(ctx, db, 42, a.Fence, sqlguard.Column{Name: "status", Value: "draft"})
	fmt.Println("A's update:", err)

	// A pauses past its TTL; B takes over and updates the row.
	var b *fenced.Lease
	for b == nil {
		time.Sleep(10 * time.Millisecond)
		b, _ = c.AcquireLease(ctx, "invoice-42", "worker-b", time.Minute)
	}
	err = invoices.Update(ctx, db, 42, b.Fence, sqlguard.Column{Name: "status", Value: "sent"})
	fmt.Println("B's update:", err)

	// A wakes and updates with its old fence: refused, the row unchanged.
	err = invoices.Update(ctx, db, 42, a.Fence, sqlguard.Column{Name: "status", Value: "cancelled"})
	var stale *fenced.StaleError
	if errors.As(err, &stale) {
		fmt.Println("A's late update refused: current fence", stale.CurrentFence)
	}
	var status string
	var fence int64
	db.QueryRowContext(ctx, `SELECT status, fence FROM invoices WHERE id = 42`).Scan(&status, &fence)
	fmt.Printf("invoice 42: %s (fence %d)\n", status, fence)

	// Output:
	// A's update: <nil>
	// B's update: <nil>
	// A's late update refused: current fence 2
	// invoice 42: sent (fence 2)
}
