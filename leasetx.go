package fenced

import (
	"context"

	"github.com/fenced/fenced/driver"
)

// Tx is the handle inside a fenced transaction: Exec, Query and QueryRow in
// the backend's own SQL dialect. The backend's native transaction is
// reachable through the driver's Tx type (pgdriver.Tx.Pgx, sqlitedriver.Tx.SQL,
// mysqldriver.Tx.SQL).
type Tx = driver.Tx

// LeaseTx runs fn in a transaction that commits only under generation l.
//
// The transaction first locks the lease row in share mode (PostgreSQL
// SELECT … FOR SHARE, MySQL and MariaDB SELECT … LOCK IN SHARE MODE; on
// SQLite it is a write transaction) and checks owner,
// fence and expiry by the database clock. If l is no longer current, fn is not
// called and a *StaleError is returned. While the transaction is open a
// takeover waits for it, so what commits was written under a generation that
// was still current; this closes the window a plain EXISTS check leaves open
// under READ COMMITTED. If fn returns an error the transaction rolls back and
// the error is returned.
//
// Keep fn short: it holds the lease row lock (SQLite: the database's write
// lock) until it returns.
func (c *Client) LeaseTx(ctx context.Context, l Lease, fn func(Tx) error) error {
	if err := validRef(l); err != nil {
		return err
	}
	return c.d.LeaseTx(ctx, leaseRef(l), fn)
}
