// Package sqlitedriver is the embedded SQLite backend of fenced, through the
// pure-Go modernc.org/sqlite (no cgo).
//
// SQLite has one writer at a time. Every write transaction begins IMMEDIATE,
// so it holds the write lock from its first statement; within a process a
// writer slot queues writers instead of letting them spin in the busy handler, and
// across processes busy_timeout makes them wait (tried again when it runs
// out, until the writer's context ends). The file runs in WAL mode
// with synchronous=FULL: a grant lost in a power cut would be granted twice.
// The database clock is the host clock read inside each statement
// (millisecond resolution).
package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
	"modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// nowUS is the host clock in integer microseconds, read once per statement
// step ('now' is fixed within one sqlite3_step).
const nowUS = `(CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) * 1000)`

// Driver implements driver.Driver on a SQLite file.
type Driver struct {
	db   *sql.DB
	path string // the database file, for messages
	// wsem queues this process's writers (SQLite admits one); a channel
	// rather than a mutex so that a writer waiting for it honours its ctx.
	wsem chan struct{}
}

var _ driver.Driver = (*Driver)(nil)

var uriPath = strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23")

// Open opens (creating if needed) the SQLite database file at path.
func Open(ctx context.Context, path string) (*Driver, error) {
	// SQLite gives each connection of these a database of its own, and the
	// pool holds several: each would migrate and grant fences on its own.
	if path == "" || path == ":memory:" {
		return nil, fencedtype.Invalid("sqlite path", "%q opens a separate database on every connection; name a file", path)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(30000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Set("_txlock", "immediate")
	// The path goes into a file: URI, percent-escaped where the URI would
	// read it otherwise: a "?" in it must not start parameters read before
	// these (the first _txlock wins, a later synchronous overrides), nor a
	// "#" or "%" name another file. SQLite decodes the escapes.
	db, err := sql.Open("sqlite", "file:"+uriPath.Replace(path)+"?"+q.Encode())
	if err != nil {
		return nil, openError(path, err)
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, openError(path, err)
	}
	return &Driver{db: db, path: path, wsem: make(chan struct{}, 1)}, nil
}

// DB returns the database handle, for the caller's own queries.
func (d *Driver) DB() *sql.DB { return d.db }

// Dialect returns fencedtype.DialectSQLite.
func (d *Driver) Dialect() fencedtype.Dialect { return fencedtype.DialectSQLite }

// Close closes the database.
func (d *Driver) Close() error { return d.db.Close() }

// write runs fn holding the process's writer slot, or returns ctx's error
// if ctx ends first. A write refused because the file or its directory is
// read-only is explained (explainReadOnly), one that found a fenced table
// missing is a *fencedtype.NotMigratedError (notMigrated).
func (d *Driver) write(ctx context.Context, fn func() error) error {
	select {
	case d.wsem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("waiting for the SQLite writer: %w", ctx.Err())
	}
	defer func() { <-d.wsem }()
	return notMigrated(d.explainReadOnly(fn()))
}

// busy reports SQLITE_BUSY: busy_timeout ran out while another process (or
// a transaction of DB()) held the write lock, before anything was written.
// A writer waits for the lock until its context ends, as it would for a row
// lock on PostgreSQL, so it tries again.
func busy(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == 5 // SQLITE_BUSY and its extended codes
}

// writeTx runs fn in an IMMEDIATE transaction holding the writer slot;
// fn's error rolls back, and so does any other way out, a panic in the
// caller's fn included: a transaction left open would keep SQLite's write
// lock until ctx ends, and every other writer would fail "database is locked".
func (d *Driver) writeTx(ctx context.Context, fn func(*sql.Tx) error) error {
	return d.write(ctx, func() error {
		tx, err := beginImmediate(ctx, d.db)
		if err != nil {
			return err
		}
		return sqldb.Run(tx, fn)
	})
}

// beginImmediate begins a transaction on db (the pool, or one connection
// of it), IMMEDIATE as every connection's _txlock says, trying again while
// another process holds the write lock past busy_timeout.
func beginImmediate(ctx context.Context, db interface {
	BeginTx(context.Context, *sql.TxOptions) (*sql.Tx, error)
}) (*sql.Tx, error) {
	tx, err := db.BeginTx(ctx, nil)
	for busy(err) && ctx.Err() == nil {
		tx, err = db.BeginTx(ctx, nil)
	}
	return tx, err
}
