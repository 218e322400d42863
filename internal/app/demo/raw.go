package demo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/mysqldriver"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/driver/sqlitedriver"
)

// The SQL the demo runs itself — its own tables, and steps fenced's API
// does not offer (a claim held open in a transaction) — goes through the
// connections of the driver the demo opened for a client (open): pgdriver's
// pool, or sqlitedriver's or mysqldriver's database handle. The demo writes
// placeholders as $1, $2…; on MySQL and MariaDB they are rewritten to ?
// with the arguments reordered to match (see rebind).

// open opens url with a driver of the demo's own and returns a Client over
// it, and the driver for the demo's own statements, so that they need not
// reach behind the Client. Close the driver when done; the Client then
// stops working.
func open(ctx context.Context, url string) (*fenced.Client, driver.Driver, error) {
	d, err := fenced.OpenDriver(ctx, url)
	if err != nil {
		return nil, nil, err
	}
	return fenced.New(d, fenced.Config{}), d, nil
}

// txn is a transaction the demo opened on a client's connection. Its
// methods take the demo's $n placeholders; raw is the driver's own
// transaction, to hand to fenced (CompleteJobTx).
type txn struct {
	fenced.Tx
	raw      fenced.Tx
	commit   func(context.Context) error
	rollback func(context.Context) error
}

// begin opens a transaction. On SQLite it begins IMMEDIATE (the driver's
// setting), so it holds the database's single write lock from here on.
func begin(ctx context.Context, d driver.Driver) (*txn, error) {
	switch d := d.(type) {
	case *pgdriver.Driver:
		tx, err := d.Pool().Begin(ctx)
		if err != nil {
			return nil, err
		}
		raw := pgdriver.WrapTx(tx)
		return &txn{Tx: raw, raw: raw, commit: tx.Commit, rollback: tx.Rollback}, nil
	case *sqlitedriver.Driver:
		return sqlTxn(ctx, d.DB(), func(tx *sql.Tx) fenced.Tx { return sqlitedriver.WrapTx(tx) }, false)
	case *mysqldriver.Driver:
		return sqlTxn(ctx, d.DB(), func(tx *sql.Tx) fenced.Tx { return mysqldriver.WrapTx(tx) }, true)
	}
	return nil, fmt.Errorf("demo: no raw access to a %s database", d.Dialect())
}

// sqlTxn begins a database/sql transaction on db and wraps it; with
// questionMarks the demo's placeholders are rewritten for it.
func sqlTxn(ctx context.Context, db *sql.DB, wrap func(*sql.Tx) fenced.Tx, questionMarks bool) (*txn, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	raw := wrap(tx)
	t := &txn{Tx: raw, raw: raw,
		commit:   func(context.Context) error { return tx.Commit() },
		rollback: func(context.Context) error { return tx.Rollback() }}
	if questionMarks {
		t.Tx = reboundTx{raw}
	}
	return t, nil
}

// reboundTx rewrites the demo's $n placeholders to ? before passing a
// statement on.
type reboundTx struct{ tx fenced.Tx }

func (r reboundTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	q, a := rebind(query, args)
	return r.tx.Exec(ctx, q, a...)
}

func (r reboundTx) Query(ctx context.Context, query string, args ...any) (driver.Rows, error) {
	q, a := rebind(query, args)
	return r.tx.Query(ctx, q, a...)
}

func (r reboundTx) QueryRow(ctx context.Context, query string, args ...any) driver.Row {
	q, a := rebind(query, args)
	return r.tx.QueryRow(ctx, q, a...)
}

// rebind turns each $n of query into ? and lists the arguments in the order
// their placeholders appear, so "owner = $2 WHERE name = $1" with (name,
// owner) becomes "owner = ? WHERE name = ?" with (owner, name). The demo's
// statements hold no $ in literals.
func rebind(query string, args []any) (string, []any) {
	var b strings.Builder
	var out []any
	for i := 0; i < len(query); i++ {
		j := i + 1
		for j < len(query) && query[j] >= '0' && query[j] <= '9' {
			j++
		}
		if query[i] != '$' || j == i+1 {
			b.WriteByte(query[i])
			continue
		}
		n, err := strconv.Atoi(query[i+1 : j])
		if err != nil || n < 1 || n > len(args) {
			panic(fmt.Sprintf("demo: placeholder %s with %d arguments in %q", query[i:j], len(args), query))
		}
		b.WriteByte('?')
		out = append(out, args[n-1])
		i = j - 1
	}
	return b.String(), out
}

// withTx runs fn in a short transaction of its own, committed when fn
// returns nil.
func withTx(ctx context.Context, d driver.Driver, fn func(fenced.Tx) error) error {
	tx, err := begin(ctx, d)
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
func execSQL(ctx context.Context, d driver.Driver, query string, args ...any) (n int64, err error) {
	err = withTx(ctx, d, func(tx fenced.Tx) error {
		n, err = tx.Exec(ctx, query, args...)
		return err
	})
	return n, err
}

// scanSQL reads one row in its own transaction into dest.
func scanSQL(ctx context.Context, d driver.Driver, query string, args []any, dest ...any) error {
	return withTx(ctx, d, func(tx fenced.Tx) error { return tx.QueryRow(ctx, query, args...).Scan(dest...) })
}

// noRows reports a query that found nothing, on any backend.
func noRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// The demo's own tables, one of each per run (env.table names them):
// plain SQL every backend accepts (a key is a VARCHAR: MySQL cannot index
// an unbounded TEXT). %s is the table's name.
const (
	naiveJobsDDL = `CREATE TABLE %s (
    name  VARCHAR(200) PRIMARY KEY,
    state TEXT NOT NULL,
    owner TEXT)`
	businessDDL = `CREATE TABLE %s (
    job    BIGINT NOT NULL,
    worker TEXT   NOT NULL,
    fence  BIGINT NOT NULL)`
)
