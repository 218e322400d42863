package pgdriver

import (
	"context"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
)

// Tx is the driver.Tx of a fenced transaction on PostgreSQL. SQL uses $1
// placeholders.
type Tx struct{ tx pgx.Tx }

var _ driver.Tx = (*Tx)(nil)

// WrapTx makes the caller's own pgx transaction usable where fenced takes a
// driver.Tx: enqueueing or completing a job inside it.
func WrapTx(tx pgx.Tx) *Tx { return &Tx{tx: tx} }

// pgxOf returns the pgx transaction behind a driver.Tx of this driver, or an
// *InvalidError for a transaction of another backend (or a nil one).
func pgxOf(tx driver.Tx) (pgx.Tx, error) {
	if t, ok := tx.(*Tx); ok && t != nil && t.tx != nil {
		return t.tx, nil
	}
	return nil, fencedtype.Invalid("tx", "%T is not a transaction of the PostgreSQL backend: wrap a pgx.Tx with pgdriver.WrapTx", tx)
}

// Pgx returns the underlying transaction for anything the narrow interface
// lacks (COPY, batches). Do not commit or roll it back yourself.
func (t *Tx) Pgx() pgx.Tx { return t.tx }

// Exec implements driver.Tx.
func (t *Tx) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := t.tx.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

// Query implements driver.Tx.
func (t *Tx) Query(ctx context.Context, sql string, args ...any) (driver.Rows, error) {
	rows, err := t.tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return rowsAdapter{rows}, nil
}

// QueryRow implements driver.Tx.
func (t *Tx) QueryRow(ctx context.Context, sql string, args ...any) driver.Row {
	return t.tx.QueryRow(ctx, sql, args...)
}

type rowsAdapter struct{ pgx.Rows }

func (r rowsAdapter) Close() error {
	r.Rows.Close()
	return r.Rows.Err()
}
