package sqlitedriver

import (
	"context"
	"database/sql"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// Tx is the driver.Tx of a fenced transaction on SQLite. SQL uses ? or ?N
// placeholders.
type Tx struct{ tx *sql.Tx }

var _ driver.Tx = (*Tx)(nil)

// WrapTx makes the caller's own transaction usable where fenced takes a
// driver.Tx: enqueueing or completing a job inside it. The transaction must
// have begun IMMEDIATE, as every transaction of DB() does, so it holds the
// write lock from its first statement.
func WrapTx(tx *sql.Tx) *Tx { return &Tx{tx: tx} }

// sqlOf returns the database/sql transaction behind a driver.Tx of this
// driver, or an *InvalidError for a transaction of another backend (or a
// nil one).
func sqlOf(tx driver.Tx) (*sql.Tx, error) {
	if t, ok := tx.(*Tx); ok && t != nil && t.tx != nil {
		return t.tx, nil
	}
	return nil, fencedtype.Invalid("tx", "%T is not a transaction of the SQLite backend: wrap a *sql.Tx with sqlitedriver.WrapTx", tx)
}

// SQL returns the underlying transaction. Do not commit or roll it back
// yourself.
func (t *Tx) SQL() *sql.Tx { return t.tx }

// Exec implements driver.Tx.
func (t *Tx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return sqldb.Exec(ctx, t.tx, query, args...)
}

// Query implements driver.Tx.
func (t *Tx) Query(ctx context.Context, query string, args ...any) (driver.Rows, error) {
	return t.tx.QueryContext(ctx, query, args...)
}

// QueryRow implements driver.Tx.
func (t *Tx) QueryRow(ctx context.Context, query string, args ...any) driver.Row {
	return t.tx.QueryRowContext(ctx, query, args...)
}
