package mysqldriver

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
	"github.com/go-sql-driver/mysql"
)

// setReadCommitted is run on every new connection. The statement form works
// on both servers; the variable is transaction_isolation on MySQL 8 but
// tx_isolation on MariaDB before 11.1.
const setReadCommitted = `SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED`

// setAutocommit is run on every new connection, after the URL's session
// variables and whatever the server's defaults are: a statement run outside
// a transaction commits at once, and a commit opens no next transaction
// (completion_type CHAIN would), so what the driver reports done is
// committed, not left open on a pooled connection.
const setAutocommit = `SET SESSION autocommit = 1, completion_type = 0`

// sessionConnector runs setAutocommit, then init, on every new connection:
// init by default makes the session READ COMMITTED, which takes no gap locks, so a claim's scan or
// a lookup of a missing lease name does not block inserts next to it, and
// unlocks at once the rows an UPDATE examined but did not change.
// Correctness never depends on it (see the package doc).
type sessionConnector struct {
	inner sqldriver.Connector
	init  string
}

func (c sessionConnector) Connect(ctx context.Context) (sqldriver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		// A dial cut off by the caller's deadline fails ("i/o timeout") the
		// moment the deadline passes, possibly before the context records
		// it; report the context's own error, so callers can tell.
		if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline) {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return nil, err
	}
	for _, init := range []string{setAutocommit, c.init} {
		if init == "" {
			continue
		}
		if _, err := conn.(sqldriver.ExecerContext).ExecContext(ctx, init, nil); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}

func (c sessionConnector) Driver() sqldriver.Driver { return c.inner.Driver() }

// inTx runs fn in a transaction of the driver's own, committing when fn
// returns nil. fn is driver code that can run again from the start: InnoDB
// resolves a deadlock by rolling one transaction back whole, and that
// transaction is retried after a short random pause, so the contenders do
// not meet again in step.
func (d *Driver) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	return d.inTxOpts(ctx, nil, fn)
}

// inTxOpts is inTx with transaction options.
func (d *Driver) inTxOpts(ctx context.Context, opts *sql.TxOptions, fn func(*sql.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := runTxOpts(ctx, d.db, opts, fn)
		if !isDeadlock(err) || attempt == 50 {
			return err
		}
		pause := time.Duration(rand.Int64N(int64(min(attempt, 10)) * int64(time.Millisecond)))
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}

// runTx runs fn in a transaction, committing when it returns nil. Any other
// way out, a panic in the caller's fn included, rolls back: a transaction
// left open would hold its row locks until ctx ends.
func runTx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	return runTxOpts(ctx, db, nil, fn)
}

func runTxOpts(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	return notMigrated(sqldb.Run(tx, fn))
}

// MySQL error numbers the driver handles.
const (
	errDupEntry    = 1062 // ER_DUP_ENTRY
	errNoSuchTable = 1146 // ER_NO_SUCH_TABLE
	errDeadlock    = 1213 // ER_LOCK_DEADLOCK: the transaction was rolled back
	// ER_AUTOINC_READ_FAILED: what InnoDB reports instead of a deadlock or a
	// lock wait timeout met while an INSERT … SELECT waits for the table's
	// auto-increment lock (enqueueKeyedSQL under REPEATABLE READ, whose
	// lookup share-locks the key's index range): the statement was undone,
	// and the transaction too when it was a deadlock's victim.
	errAutoincRead = 1467
)

func isMySQLError(err error, number uint16) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == number
}

// isDeadlock reports a conflict that undid fn's work and that running the
// transaction again resolves: a deadlock, or an auto-increment lock the
// statement could not get (errAutoincRead).
func isDeadlock(err error) bool {
	return isMySQLError(err, errDeadlock) || isMySQLError(err, errAutoincRead)
}

func isDuplicate(err error) bool { return isMySQLError(err, errDupEntry) }

// execCount runs a statement and returns the rows it matched: the driver's
// connections count matched rows (clientFoundRows), not changed ones.
func execCount(ctx context.Context, q sqldb.Querier, query string, args ...any) (int64, error) {
	return sqldb.Exec(ctx, q, query, args...)
}

// isDiagnosis tells a diagnosed refusal from a failed read.
func isDiagnosis(err error) bool {
	return errors.Is(err, fencedtype.ErrStale) || errors.Is(err, fencedtype.ErrNotFound)
}
