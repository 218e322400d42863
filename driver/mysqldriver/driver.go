// Package mysqldriver is the MariaDB (10.6 and later) and MySQL 8 backend
// of fenced, through github.com/go-sql-driver/mysql.
//
// # What is tested
//
// MariaDB 10.11 only, with its default settings (innodb_autoinc_lock_mode
// 1, binary log off): the conformance suite under READ COMMITTED and
// REPEATABLE READ, the demo, the benchmark, the chaos suite
// (docs/chaos.md). No MySQL server package is
// installable on the machines this is tested on, so MySQL 8 is written for
// (the list below says how) but has never run these tests. MariaDB
// 10.6-10.10 are not tested either; everything used exists there (SKIP
// LOCKED since 10.6).
//
// # MySQL 8: what differs from MariaDB in what the driver relies on
//
// Each of these is a place where a MySQL 8 server could behave otherwise
// than the MariaDB the tests ran on; none is verified on MySQL.
//
//   - JSON. MariaDB's JSON is LONGTEXT with a JSON_VALID check: job args,
//     output and progress come back byte for byte. MySQL 8 stores a binary
//     form and writes it back normalized: keys sorted, of duplicate keys
//     the last kept, its own spacing, and numbers re-encoded (a number with
//     a fraction or an integer beyond 64 bits as a double: 1.10 reads back
//     as 1.1, 12345678901234567890123 as 1.2345678901234568e+22). Handlers
//     that compare stored JSON as text, or need exact large numbers, would
//     see a difference. (PostgreSQL's jsonb normalizes too, but keeps
//     numbers exact.) Nesting is limited to 31 levels because MariaDB's
//     JSON_VALID refuses 32; MySQL allows 100.
//   - Locking reads. Guards use LOCK IN SHARE MODE, which MySQL 8 still
//     accepts as a deprecated synonym of FOR SHARE (the same lock); claims,
//     recovery and heartbeats use FOR UPDATE SKIP LOCKED (MySQL 8.0.1+,
//     MariaDB 10.6+). The locks are InnoDB's on both, but which rows a
//     locking scan locks or skips under READ COMMITTED was observed only
//     on MariaDB (the claim-race and contention tests).
//   - Found rows. Connections set CLIENT_FOUND_ROWS, so an UPDATE reports
//     the rows it matched, not the rows it changed (a second release, a
//     renewal to the same expiry): the flag and its meaning are the same on
//     both servers.
//   - LAST_INSERT_ID(expr) in an UPDATE. A renewal's clock reading, a
//     resource's new version and a heartbeat's new expiry come back in the
//     OK packet this way; both servers document that mysql_insert_id
//     returns expr after an UPDATE that called it.
//   - The clock. UTC_TIMESTAMP(6) reads the statement's start to the
//     microsecond on both, and times are DATETIME(6). MySQL rounds excess
//     fractional digits when storing a time where MariaDB truncates; the
//     driver always writes exactly six, so neither applies.
//   - Assignment order. A grant's UPDATE decides the fence before it sets
//     the owner, relying on a single-table UPDATE assigning left to right,
//     which MySQL documents and MariaDB does unless SIMULTANEOUS_ASSIGNMENT
//     is set (which gives the same result here).
//   - LAST_INSERT_ID() read back within a statement. The UPDATEs that end
//     attempts also say whether a row they ended is a workflow's task, by
//     a flag every row ORs into the LAST_INSERT_ID the row before it set
//     (workflowend.go); both servers document that LAST_INSERT_ID(expr)
//     makes expr the value LAST_INSERT_ID() returns next, observed within
//     one statement only on MariaDB.
//   - RETURNING. MariaDB has INSERT … RETURNING and DELETE … RETURNING,
//     MySQL has none; the driver uses none, so both servers take the same
//     statements (see below).
//   - Auto-increment. MySQL 8's default innodb_autoinc_lock_mode is 2, so a
//     batch enqueue inserts one job per statement (the path MariaDB takes
//     for jobs with an idempotency key, never for a whole batch in the
//     tests). A fence advance moves the id counter by inserting and
//     deleting placeholder jobs, relying on InnoDB keeping the counter
//     across restarts (MySQL 8.0+, MariaDB 10.2.4+).
//   - CHECK constraints are enforced from MySQL 8.0.16 (parsed and ignored
//     before it): use 8.0.16 or later.
//   - Migrations. MySQL has no ADD COLUMN IF NOT EXISTS, so migration 0003
//     reads information_schema and prepares the ALTER itself: written for
//     MySQL, run only on MariaDB. Migrations 5 and 9 index virtual
//     generated columns (MySQL 5.7+, MariaDB 10.2+); the claims name the
//     column of migration 9 and force its indexes.
//   - Sessions. The isolation level is set with SET SESSION TRANSACTION
//     ISOLATION LEVEL, which both accept; a URL that sets it as a variable
//     must use the server's name for it (transaction_isolation on MySQL 8,
//     tx_isolation on MariaDB before 11.1). MySQL 8 logs binary ROW events
//     by default, which READ COMMITTED allows; the tests ran with binary
//     logging off. MySQL 8's default authentication, caching_sha2_password,
//     is go-sql-driver/mysql's to handle, and untested here.
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
//     its row first and decides in the next statement (see lease.go). An end
//     that waited for its job's row (a single end, or a batch of completions
//     in the driver's own transaction) judges the lease as of before the
//     wait; nobody else can have taken the job meanwhile (recovery skips a
//     locked row, claims take queued ones), so it writes nothing stale.
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
//   - No trigger may update the table it is defined on, so the release
//     rule of workflows (docs/design.md §6.18) runs in Go, in the
//     transaction of every transition that finishes a task or takes it out
//     of a finished state (workflowstep.go): a conditional UPDATE of each
//     dependent row per step, which reads the latest committed counters
//     under the row's lock.
//   - No LISTEN/NOTIFY exists, so the driver is not a driver.JobListener and
//     idle workers poll.
//   - A grant lost in a crash would be granted twice, so the server must
//     commit durably: Open refuses a server whose
//     innodb_flush_log_at_trx_commit is not 1 (the default) or MariaDB's 3,
//     and one that writes a binary log (log_bin=ON) with sync_binlog other
//     than 1, unless innodb_flush_log_at_trx_commit is 3 (a session can set
//     neither, as PostgreSQL's synchronous_commit can be; see durable.go).
//     Binary logging, if on, must be ROW or MIXED, as InnoDB requires for
//     READ COMMITTED.
package mysqldriver

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/queueset"
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
	// limited holds the queues whose last claim went the limited way, so
	// that their next claim skips the plain pick (which would only find
	// the gate again) and goes straight to claimLimitedJobs; a limited
	// claim whose candidates no key or global limit gates takes the queue
	// out.
	limited queueset.Set
	// noFullKeys holds the queues whose last limited pick with the full
	// keys found none full and whose round admitted every candidate it
	// could: their next limited picks leave the full keys out, until a
	// round cannot admit what it picked (docs/design.md §10, "The limited
	// claim"). A hint: the read after the gate locks decides.
	noFullKeys queueset.Set
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

// DB returns the driver's pool, for the caller's own queries. Its
// transactions can be passed to WrapTx.
func (d *Driver) DB() *sql.DB { return d.db }

// Dialect returns fencedtype.DialectMySQL.
func (d *Driver) Dialect() fencedtype.Dialect { return fencedtype.DialectMySQL }

// Close closes the pool.
func (d *Driver) Close() error { return d.db.Close() }
