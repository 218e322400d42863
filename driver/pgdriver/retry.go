package pgdriver

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Riding through a failover.
//
// While the primary is down and its standby not yet promoted, every new
// connection fails: the old primary refuses it, the standby is read-only
// (target_session_attrs=read-write). Nothing reached a server, so the call
// is made again, with backoff, until it succeeds, its context ends or
// retryFor passes — once the database has been reached at all: a database
// that was never up fails at once. A call whose connection failed after the
// statement was sent is not made again: it may have committed, and it
// returns an *UnknownOutcomeError (errors.Is fencedtype.ErrUnknownOutcome),
// never success and never stale.

// retryFor bounds how long a call waits for the database to come back: long
// enough for an HA manager to notice a dead primary and promote its standby.
const retryFor = time.Minute

// pool is the driver's pgx pool with the retry above on the calls the
// driver makes through it.
type pool struct {
	*pgxpool.Pool
	reached atomic.Bool // some call has succeeded
}

func newPool(p *pgxpool.Pool) *pool { return &pool{Pool: p} }

// retry runs op until it succeeds, fails for a reason a retry cannot mend,
// ctx ends or retryFor passes.
func (p *pool) retry(ctx context.Context, op func() error) error {
	var deadline time.Time
	wait := 50 * time.Millisecond
	for {
		err := notMigrated(op())
		switch {
		case err == nil:
			p.reached.Store(true)
			return nil
		case !p.reached.Load() || ctx.Err() != nil:
			return err
		case !nothingSent(err):
			return unknownOutcome(err)
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(retryFor)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return err
		}
		t := time.NewTimer(min(wait, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// nothingSent reports whether err happened before anything reached a
// server, or was the server's refusal of a write it did not make: making the
// call again is safe.
func nothingSent(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.SafeToRetry(err) {
		return true
	}
	var pe *pgconn.PgError
	// read_only_sql_transaction: a server that is (now) a standby refused
	// it; cannot_connect_now: a server still starting.
	return errors.As(err, &pe) && (pe.Code == "25006" || pe.Code == "57P03")
}

// unknownOutcome marks an error that lost the connection after the call was
// sent; other errors (a constraint, a cancelled context) pass as they are.
func unknownOutcome(err error) error {
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe):
		// The server ended the session (shutdown, crash, admin) or the
		// connection failed mid-statement.
		if pe.Code[:2] != "08" && pe.Code != "57P01" && pe.Code != "57P02" {
			return err
		}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, pgconn.ErrConnClosed):
	default:
		var ne net.Error
		if !errors.As(err, &ne) {
			return err
		}
	}
	return &fencedtype.UnknownOutcomeError{Err: err}
}

// QueryRow runs a query whose row is read by Scan, retried as above.
func (p *pool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return retryRow{p: p, ctx: ctx, sql: sql, args: args}
}

type retryRow struct {
	p    *pool
	ctx  context.Context
	sql  string
	args []any
}

func (r retryRow) Scan(dest ...any) error {
	return r.p.retry(r.ctx, func() error { return r.p.Pool.QueryRow(r.ctx, r.sql, r.args...).Scan(dest...) })
}

// Query runs a query, retried while it could not be sent. A failure while
// its rows are read is the caller's (rows.Err).
func (p *pool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	var rows pgx.Rows
	err := p.retry(ctx, func() (err error) {
		rows, err = p.Pool.Query(ctx, sql, args...)
		return err
	})
	return rows, err
}

// Exec runs a statement, retried as above.
func (p *pool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	var tag pgconn.CommandTag
	err := p.retry(ctx, func() (err error) {
		tag, err = p.Pool.Exec(ctx, sql, args...)
		return err
	})
	return tag, err
}

// Begin starts a transaction, retried while it could not be started. Its
// statements and its commit are not retried.
func (p *pool) Begin(ctx context.Context) (pgx.Tx, error) {
	return p.BeginTx(ctx, pgx.TxOptions{})
}

// BeginTx is Begin with options.
func (p *pool) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	var tx pgx.Tx
	err := p.retry(ctx, func() (err error) {
		tx, err = p.Pool.BeginTx(ctx, opts)
		return err
	})
	return tx, err
}

// inTx runs fn in a transaction begun as Begin is (retried while it could
// not be started) and commits it. fn's error rolls back and is returned as
// it is (a statement that failed with its connection did not commit: the
// server rolls back a transaction whose connection is gone); a commit whose
// connection failed before its reply is an *UnknownOutcomeError.
func (p *pool) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := p.Begin(ctx)
	if err != nil {
		return err
	}
	done := false
	defer func() { // also when fn panics: the row locks and the connection go back
		if !done {
			tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if err := fn(tx); err != nil {
		return notMigrated(err)
	}
	done = true
	if err := tx.Commit(ctx); err != nil {
		return unknownOutcome(err)
	}
	return nil
}

// CopyFrom copies rows into a table, retried as above; a source that can
// start over (restarter) does so before each try.
func (p *pool) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	var n int64
	err := p.retry(ctx, func() (err error) {
		if r, ok := src.(restarter); ok {
			r.restart()
		}
		n, err = p.Pool.CopyFrom(ctx, table, columns, src)
		return err
	})
	return n, err
}

// restarter is a pgx.CopyFromSource that can be read again from its start.
type restarter interface{ restart() }

// sendBatch sends b on a connection of its own and reads its results with
// read, retried as above while nothing could be sent. Statements of b
// outside an explicit transaction run in one implicit transaction, which
// commits when b's results are closed: a failure then is the batch's. A
// connection left inside a transaction (an explicit one a failed statement
// aborted) is not reused: the pool closes it.
func (p *pool) sendBatch(ctx context.Context, b *pgx.Batch, read func(pgx.BatchResults) error) error {
	return p.retry(ctx, func() error {
		br := p.Pool.SendBatch(ctx, b)
		err := read(br)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return err
	})
}
