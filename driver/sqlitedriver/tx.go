package sqlitedriver

import (
	"context"
	"database/sql"

	"github.com/fenced/fenced/driver"
)

// Tx is the driver.Tx of a fenced transaction on SQLite. SQL uses ? or ?N
// placeholders.
type Tx struct{ tx *sql.Tx }

var _ driver.Tx = (*Tx)(nil)

// SQL returns the underlying transaction. Do not commit or roll it back
// yourself.
func (t *Tx) SQL() *sql.Tx { return t.tx }

// Exec implements driver.Tx.
func (t *Tx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := t.tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Query implements driver.Tx.
func (t *Tx) Query(ctx context.Context, query string, args ...any) (driver.Rows, error) {
	return t.tx.QueryContext(ctx, query, args...)
}

// QueryRow implements driver.Tx.
func (t *Tx) QueryRow(ctx context.Context, query string, args ...any) driver.Row {
	return t.tx.QueryRowContext(ctx, query, args...)
}
