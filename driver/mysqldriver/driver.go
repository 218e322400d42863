// Package mysqldriver is the MySQL 8 / MariaDB (10.6 and later) backend of
// fenced, through github.com/go-sql-driver/mysql.
//
// How it meets the contract where the dialect differs from PostgreSQL:
//
//   - No RETURNING on UPDATE (MariaDB has it on INSERT and DELETE only, MySQL
//     nowhere). A fenced write is a conditional statement whose affected-row
//     count decides. What the caller needs back is read in the same short
//     transaction, which still holds the row's lock, so it is the row the
//     statement wrote; or, where one integer is enough (a resource's new
//     version, a renewal's clock reading), it comes back in the OK packet
//     through LAST_INSERT_ID(expr), with no transaction at all.
//   - Affected rows are matched rows: every connection sets CLIENT_FOUND_ROWS
//     (clientFoundRows=true), so an UPDATE that writes the values a row
//     already holds (a renewal to the same expiry, a second release) still
//     counts as done.
//   - The database clock is UTC_TIMESTAMP(6): MySQL's statement-start clock
//     (constant within a statement, like NOW(6)) but in UTC whatever the
//     session's time_zone, so no session setting changes an outcome. Times
//     are DATETIME(6) columns holding UTC, read back as UTC whatever the
//     connection's loc and parseTime. A statement that waited for a row lock
//     judges by the time it started, before the wait; a grant therefore locks
//     its row first and decides in the next statement (see lease.go).
//   - Sessions run READ COMMITTED (unless the URL sets the isolation level)
//     and nothing is decided from a plain read: guards are locking reads
//     (LOCK IN SHARE MODE, which MySQL 8 and MariaDB both accept), claims and
//     recovery pick rows FOR UPDATE SKIP LOCKED, and a refusal is diagnosed
//     by a locking read in the deciding transaction. A plain read in InnoDB's
//     REPEATABLE READ returns the row as it was at the transaction's first
//     read; deciding from it loses updates. The conformance suite runs in
//     both levels.
//   - Lease names, owners, resource keys, operation ids, queues, kinds and
//     idempotency keys are VARBINARY: compared byte for byte, so neither case
//     folding nor PAD SPACE ('a' = 'a ') can make two names one. (The exact
//     collation has a different name on each server: utf8mb4_0900_bin on
//     MySQL, utf8mb4_nopad_bin on MariaDB.)
//   - Migrations are DDL, which commits implicitly: they run under a named
//     lock (GET_LOCK) and every statement in them is idempotent.
//   - No LISTEN/NOTIFY exists, so the driver is not a driver.JobListener and
//     idle workers poll.
//   - A grant lost in a crash would be granted twice, so the server must
//     commit durably: Open refuses a server whose
//     innodb_flush_log_at_trx_commit is not 1 (the default) or MariaDB's 3 (a
//     session cannot set it, as PostgreSQL's synchronous_commit can be). Binary logging, if
//     on, must be ROW or MIXED, as InnoDB requires for READ COMMITTED.
package mysqldriver

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
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
	// multiple-row INSERT are consecutive (Enqueue).
	consecutiveIDs bool
}

var _ driver.Driver = (*Driver)(nil)

func init() {
	driver.Register(func(ctx context.Context, url string) (driver.Driver, error) { return Open(ctx, url) },
		"mysql", "mariadb")
}

// Open connects to a MySQL or MariaDB URL; Close closes the pool.
//
//	mysql://user:pass@host:3306/db?param=value   (also mariadb://)
//
// Parameters are go-sql-driver/mysql's DSN parameters (tls, timeout,
// charset, …), where any other name sets a session variable (for example
// time_zone=%27%2B05%3A00%27), plus pool_max_conns, the pool size (default
// the larger of 4 and the number of CPUs), and socket, a Unix socket to
// connect through instead of host:port. The driver always sets
// parseTime=true, clientFoundRows=true and loc=UTC, never multiStatements
// (only the connection that migrates uses it), and interpolateParams=true
// unless the URL says otherwise, and every session autocommit=1 and
// completion_type=0 whatever the URL or the server's defaults say (a write
// reported done is committed). Sessions run READ COMMITTED unless the URL
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
		return nil, &fencedtype.InvalidError{Field: "database url", Reason: err.Error()}
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
		return nil, connectError(cfg, err)
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
	// 3, MariaDB only, flushes at prepare and at commit: durable too.
	if flush.Valid && flush.Int64 != 1 && flush.Int64 != 3 {
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
