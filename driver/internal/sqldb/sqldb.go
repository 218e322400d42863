// Package sqldb is what the two database/sql backends, SQLite and
// MySQL/MariaDB, do alike: running a query and scanning its rows, and
// counting the rows a statement affected. It holds no SQL and decides
// nothing: each backend's statements are its own dialect's, and the
// PostgreSQL backend uses pgx's own helpers.
package sqldb

import (
	"context"
	"database/sql"
	"errors"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// Querier is what *sql.DB, *sql.Tx and *sql.Conn share.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Scanner is one result row: a *sql.Row, or a *sql.Rows positioned on one.
// It is driver.Row, so the backend-neutral scanners of package driver
// serve here too.
type Scanner = driver.Row

// One runs query, which returns at most one row, and scans the row with
// scan. No row is fencedtype.ErrNotFound, unwrapped.
func One[T any](ctx context.Context, q Querier, scan func(Scanner) (T, error), query string, args ...any) (T, error) {
	v, err := scan(q.QueryRowContext(ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		var zero T
		return zero, fencedtype.ErrNotFound
	}
	return v, err
}

// All runs query and scans every row it returns with scan, in order.
func All[T any](ctx context.Context, q Querier, scan func(Scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	return Collect(rows, err, scan)
}

// Collect scans every row of rows with scan, in order, and closes rows.
// It takes a query's two results as they come, so a failed query's error
// passes through.
func Collect[T any](rows *sql.Rows, err error, scan func(Scanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Value scans a row of one column, such as an id.
func Value[T any](row Scanner) (T, error) {
	var v T
	err := row.Scan(&v)
	return v, err
}

// Run runs fn in tx, just begun, and commits when fn returns nil. Any other
// way out, a panic in fn included, rolls back: a transaction left open
// would hold its locks (SQLite's write lock, InnoDB's row locks) until its
// context ends.
func Run(tx *sql.Tx, fn func(*sql.Tx) error) error {
	defer tx.Rollback() // after a commit: sql.ErrTxDone, nothing done
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// Exec runs a statement and returns the number of rows it affected (on
// MySQL, whose connections fenced opens with clientFoundRows, the rows it
// matched).
func Exec(ctx context.Context, q Querier, query string, args ...any) (int64, error) {
	res, err := q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
