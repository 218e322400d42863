// Package sqlitedriver is the embedded SQLite backend of fenced, through the
// pure-Go modernc.org/sqlite (no cgo).
//
// SQLite has one writer at a time. Every write transaction begins IMMEDIATE,
// so it holds the write lock from its first statement; within a process a
// mutex queues writers instead of letting them spin in the busy handler, and
// across processes busy_timeout makes them wait. The file runs in WAL mode
// with synchronous=FULL: a grant lost in a power cut would be granted twice.
// The database clock is the host clock read inside each statement
// (millisecond resolution).
package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"sync"

	"github.com/fenced/fenced/driver"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// nowUS is the host clock in integer microseconds, read once per statement
// step ('now' is fixed within one sqlite3_step).
const nowUS = `(CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) * 1000)`

// Driver implements driver.Driver on a SQLite file.
type Driver struct {
	db  *sql.DB
	wmu sync.Mutex // queues this process's writers; SQLite admits one
}

var _ driver.Driver = (*Driver)(nil)

// Open opens (creating if needed) the SQLite database file at path.
func Open(ctx context.Context, path string) (*Driver, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(30000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	return &Driver{db: db}, nil
}

// DB returns the database handle, for the caller's own queries.
func (d *Driver) DB() *sql.DB { return d.db }

// Dialect returns "sqlite".
func (d *Driver) Dialect() string { return "sqlite" }

// Close closes the database.
func (d *Driver) Close() error { return d.db.Close() }

// write runs fn holding the process's writer mutex.
func (d *Driver) write(fn func() error) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	return fn()
}

// writeTx runs fn in an IMMEDIATE transaction holding the writer mutex;
// fn's error rolls back.
func (d *Driver) writeTx(ctx context.Context, fn func(*sql.Tx) error) error {
	return d.write(func() error {
		tx, err := d.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	})
}
