package demo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/driver/sqlitedriver"
)

// The SQL the demo runs itself — its own tables, and steps fenced's API
// does not offer (a claim held open in a transaction) — goes through the
// client's own connections: pgdriver's pool or sqlitedriver's database
// handle. Placeholders are $1, $2…, which both backends accept.

// txn is a transaction the demo opened on a client's connection; its Tx can
// be handed to fenced (CompleteJobTx).
type txn struct {
	fenced.Tx
	commit   func(context.Context) error
	rollback func(context.Context) error
}

// begin opens a transaction. On SQLite it begins IMMEDIATE (the driver's
// setting), so it holds the database's single write lock from here on.
func begin(ctx context.Context, c *fenced.Client) (*txn, error) {
	switch d := c.Driver().(type) {
	case *pgdriver.Driver:
		tx, err := d.Pool().Begin(ctx)
		if err != nil {
			return nil, err
		}
		return &txn{Tx: pgdriver.WrapTx(tx), commit: tx.Commit, rollback: tx.Rollback}, nil
	case *sqlitedriver.Driver:
		tx, err := d.DB().BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		return &txn{Tx: sqlitedriver.WrapTx(tx),
			commit:   func(context.Context) error { return tx.Commit() },
			rollback: func(context.Context) error { return tx.Rollback() }}, nil
	}
	return nil, fmt.Errorf("demo: no raw access to a %s database", c.Driver().Dialect())
}

// withTx runs fn in a short transaction of its own, committed when fn
// returns nil.
func withTx(ctx context.Context, c *fenced.Client, fn func(fenced.Tx) error) error {
	tx, err := begin(ctx, c)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.rollback(ctx)
		return err
	}
	return tx.commit(ctx)
}

// execSQL runs one statement in its own transaction and returns the rows it
// affected.
func execSQL(ctx context.Context, c *fenced.Client, query string, args ...any) (n int64, err error) {
	err = withTx(ctx, c, func(tx fenced.Tx) error {
		n, err = tx.Exec(ctx, query, args...)
		return err
	})
	return n, err
}

// scanSQL reads one row in its own transaction into dest.
func scanSQL(ctx context.Context, c *fenced.Client, query string, args []any, dest ...any) error {
	return withTx(ctx, c, func(tx fenced.Tx) error { return tx.QueryRow(ctx, query, args...).Scan(dest...) })
}

// noRows reports a query that found nothing, on either backend.
func noRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// The demo's own tables: plain SQL both backends accept.
const (
	naiveJobsDDL = `CREATE TABLE IF NOT EXISTS fenced_demo_naive_jobs (
    name  TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    owner TEXT)`
	businessDDL = `CREATE TABLE IF NOT EXISTS fenced_demo_business (
    job    BIGINT NOT NULL,
    worker TEXT   NOT NULL,
    fence  BIGINT NOT NULL)`
)
