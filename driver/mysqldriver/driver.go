// Package mysqldriver is the MySQL 8 / MariaDB (10.6 and later) backend of
// fenced, through github.com/go-sql-driver/mysql.
//
// How it meets the contract where the dialect differs from PostgreSQL:
//
//   - No RETURNING on UPDATE (MariaDB has it on INSERT and DELETE only, MySQL
//     nowhere). A fenced write is one conditional statement whose affected-row
//     count decides, inside a short transaction; what the caller needs back is
//     read while that transaction still holds the row's lock, so it is the row
//     the statement wrote.
//   - Affected rows are matched rows: every connection sets CLIENT_FOUND_ROWS
//     (clientFoundRows=true), so an UPDATE that writes the values a row
//     already holds (a renew to the same expiry, a second release) still
//     counts as done.
//   - The database clock is UTC_TIMESTAMP(6): the statement-start clock (like
//     NOW(6), constant within a statement) but in UTC whatever the session's
//     time_zone, so no session setting changes an outcome. Times are
//     DATETIME(6) columns holding UTC, read back as UTC whatever the
//     connection's loc and parseTime.
//   - Sessions run READ COMMITTED (unless the URL sets the isolation level)
//     and nothing is decided from a plain read:
//     guards are locking reads (LOCK IN SHARE MODE, which MySQL 8 and MariaDB
//     both accept), claims and recovery pick rows FOR UPDATE SKIP LOCKED, and
//     a refusal is diagnosed by a locking read in the deciding transaction. A
//     plain read in InnoDB's REPEATABLE READ returns the row as it was at the
//     transaction's first read; deciding from it loses updates.
//   - Lease names, owners, resource keys, operation ids, queues, kinds and
//     idempotency keys are VARBINARY: compared byte for byte, so neither case
//     folding nor PAD SPACE ('a' = 'a ') can make two names one. (The exact
//     collation has a different name on each server: utf8mb4_0900_bin on
//     MySQL, utf8mb4_nopad_bin on MariaDB.)
//   - No LISTEN/NOTIFY exists, so the driver is not a driver.JobNotifier and
//     idle workers poll.
//   - A grant lost in a crash would be granted twice, so the server must
//     commit durably: Open refuses a server whose
//     innodb_flush_log_at_trx_commit is not 1 (the default; a session cannot
//     set it, as PostgreSQL's synchronous_commit can be). Binary logging, if
//     on, must be ROW or MIXED, as InnoDB requires for READ COMMITTED.
package mysqldriver

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/go-sql-driver/mysql"
)

// now is the database clock of every deciding statement.
const now = `UTC_TIMESTAMP(6)`

// Driver implements driver.Driver on a database/sql pool of MySQL or
// MariaDB connections.
type Driver struct {
	db  *sql.DB
	cfg *mysql.Config // to open the migration connection
	// consecutiveIDs: innodb_autoinc_lock_mode is 0 or 1, so the ids of one
	// multiple-row INSERT are consecutive (JobInsert).
	consecutiveIDs bool
}

var _ driver.Driver = (*Driver)(nil)

// Open connects to a MySQL or MariaDB URL; Close closes the pool.
//
//	mysql://user:pass@host:3306/db?param=value   (also mariadb://)
//
// Parameters are go-sql-driver/mysql's DSN parameters (tls, timeout,
// charset, …), where any other name sets a session variable (for example
// time_zone=%27%2B05%3A00%27), plus pool_max_conns, the pool size (default
// the larger of 4 and the number of CPUs). The driver always sets
// parseTime=true, clientFoundRows=true and loc=UTC, never multiStatements
// (only the connection that migrates uses it), and interpolateParams=true
// unless the URL says otherwise. Sessions run READ COMMITTED unless the URL
// sets the level as a session variable (transaction_isolation on MySQL 8,
// tx_isolation on MariaDB); correctness does not depend on it.
func Open(ctx context.Context, rawURL string) (*Driver, error) {
	cfg, conns, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	return OpenConfig(ctx, cfg, conns)
}

// OpenConfig connects with a parsed configuration, whose settings the
// driver depends on it overrides (see Open), and a pool of at most maxConns
// connections.
func OpenConfig(ctx context.Context, cfg *mysql.Config, maxConns int) (*Driver, error) {
	cfg = cfg.Clone()
	cfg.ParseTime, cfg.ClientFoundRows, cfg.Loc, cfg.MultiStatements = true, true, time.UTC, false
	inner, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, &driver.InvalidError{Field: "database url", Reason: err.Error()}
	}
	init := setReadCommitted
	for name := range cfg.Params {
		if name == "transaction_isolation" || name == "tx_isolation" {
			init = "" // the URL chose
		}
	}
	db := sql.OpenDB(sessionConnector{inner, init})
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect mysql %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	if err := checkDurable(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("mysql %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	var lockMode sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT @@GLOBAL.innodb_autoinc_lock_mode`).Scan(&lockMode); err != nil {
		db.Close()
		return nil, fmt.Errorf("mysql %s/%s: read innodb_autoinc_lock_mode: %w", cfg.Addr, cfg.DBName, err)
	}
	return &Driver{db: db, cfg: cfg, consecutiveIDs: lockMode.Valid && lockMode.Int64 <= 1}, nil
}

// checkDurable refuses a server that does not flush InnoDB's log at every
// commit: a grant lost in a crash would be granted twice. Unlike
// PostgreSQL's synchronous_commit, the setting is global, so the driver
// cannot raise it for its own sessions.
func checkDurable(ctx context.Context, db *sql.DB) error {
	var flush sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT @@GLOBAL.innodb_flush_log_at_trx_commit`).Scan(&flush); err != nil {
		return fmt.Errorf("read innodb_flush_log_at_trx_commit: %w", err)
	}
	if flush.Valid && flush.Int64 != 1 {
		return fmt.Errorf("the server runs with innodb_flush_log_at_trx_commit=%d, so a commit can be lost in a crash "+
			"and a fence granted twice; fenced needs it set to 1", flush.Int64)
	}
	return nil
}

// DB returns the driver's pool, for the caller's own queries. Its
// transactions can be passed to WrapTx.
func (d *Driver) DB() *sql.DB { return d.db }

// Dialect returns "mysql".
func (d *Driver) Dialect() string { return "mysql" }

// Close closes the pool.
func (d *Driver) Close() error { return d.db.Close() }

// ParseURL turns a mysql:// (or mariadb://) URL into go-sql-driver/mysql's
// configuration, with the settings the driver depends on, and the pool size
// (pool_max_conns). Errors never quote the URL, which may hold a password.
func ParseURL(rawURL string) (cfg *mysql.Config, maxConns int, err error) {
	invalid := func(format string, args ...any) error { return driver.Invalid("database url", format, args...) }
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error quotes the whole URL
		}
		return nil, 0, invalid("%v", err)
	}
	if s := strings.ToLower(u.Scheme); (s != "mysql" && s != "mariadb") || u.Opaque != "" {
		return nil, 0, invalid("want mysql://user:pass@host:3306/db")
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return nil, 0, invalid("want one database name after the host, as in mysql://host:3306/db")
	}
	q := u.Query()
	maxConns = max(4, runtime.NumCPU())
	if v := q.Get("pool_max_conns"); v != "" {
		if maxConns, err = strconv.Atoi(v); err != nil || maxConns < 1 {
			return nil, 0, invalid("pool_max_conns %q is not a positive integer", v)
		}
	}
	q.Del("pool_max_conns")
	interpolate := !q.Has("interpolateParams")
	// The rest are go-sql-driver's own parameters, parsed by its parser.
	if cfg, err = mysql.ParseDSN("/?" + q.Encode()); err != nil {
		return nil, 0, invalid("%v", err)
	}
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.DBName = db
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "3306"
	}
	cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(host, port)
	if interpolate {
		// One round trip per statement instead of prepare, execute, close.
		cfg.InterpolateParams = true
	}
	cfg.ParseTime, cfg.ClientFoundRows, cfg.Loc, cfg.MultiStatements = true, true, time.UTC, false
	return cfg, maxConns, nil
}

// setReadCommitted is run on every new connection. The statement form works
// on both servers; the variable is transaction_isolation on MySQL 8 but
// tx_isolation on MariaDB before 11.1.
const setReadCommitted = `SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED`

// sessionConnector runs init on every new connection: by default it makes
// the session READ COMMITTED, which takes no gap locks, so a claim's scan or
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
	if c.init == "" {
		return conn, nil
	}
	if _, err := conn.(sqldriver.ExecerContext).ExecContext(ctx, c.init, nil); err != nil {
		conn.Close()
		return nil, err
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
	for attempt := 1; ; attempt++ {
		err := runTx(ctx, d.db, fn)
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

func runTx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// MySQL error numbers the driver handles.
const (
	errDupEntry = 1062 // ER_DUP_ENTRY
	errDeadlock = 1213 // ER_LOCK_DEADLOCK: the transaction was rolled back
)

func isMySQLError(err error, number uint16) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == number
}

func isDeadlock(err error) bool { return isMySQLError(err, errDeadlock) }

func isDuplicate(err error) bool { return isMySQLError(err, errDupEntry) }

// execCount runs a statement and returns the rows it matched.
func execCount(ctx context.Context, q querier, query string, args ...any) (int64, error) {
	res, err := q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// isDiagnosis tells a diagnosed refusal from a failed read.
func isDiagnosis(err error) bool {
	return errors.Is(err, driver.ErrStale) || errors.Is(err, driver.ErrNotFound)
}
