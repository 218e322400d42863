// Package sqlguard fences writes to a table of the user's own: a row
// carries the fence of the write that stored it, and an update is applied
// iff the caller's fence is at least the stored one, decided by the
// database in one statement. A lease held anywhere fenced keeps leases (an
// etcd cluster, another database) then protects rows in the user's
// PostgreSQL, MySQL/MariaDB or SQLite database, as the resource store
// protects its values.
//
// The guard compares fences, so it protects a row only against writes
// older than the row's newest guarded write. It cannot protect:
//
//   - a row the newer holder has not written: until a newer fence is
//     stored in it, the row accepts the older holder's fence, as it did
//     before the takeover. A holder that must shut every older holder out
//     of a row writes it (its fence column at least) before relying on it;
//   - rows written under fences that are not comparable: each lease name
//     (and each semaphore, each job) counts its own fences, and each
//     backend its own, so a row guarded by one name's fences from one
//     backend must never be written with another name's, or another
//     backend's, or a copy's restored without a fence advance;
//   - writes that do not go through Update: any other statement that
//     writes the row, or lowers its fence column, is not fenced, nor are
//     the other statements of the caller's transaction: roll it back when
//     Update returns an error.
package sqlguard

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/fenced/fenced/fencedtype"
)

// Dialect is the SQL dialect of the user's database: fenced's one
// spelling of a backend (fencedtype.Dialect), so a Driver's Dialect() names
// the dialect of a table in the same database.
type Dialect = fencedtype.Dialect

// The dialects Table speaks.
const (
	Postgres = fencedtype.DialectPostgres // $1 placeholders, "quoted" names
	MySQL    = fencedtype.DialectMySQL    // ? placeholders, `quoted` names (MySQL 8, MariaDB)
	SQLite   = fencedtype.DialectSQLite   // ? placeholders, "quoted" names
)

// Execer is what a *sql.DB, *sql.Tx and *sql.Conn share: Update runs its
// statement and its diagnosis on it (inside the caller's transaction when
// it is a *sql.Tx).
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Table names a table of the user's own, its key column and its fence
// column (an integer, 0 for a row no fenced write has touched). Names are
// plain SQL identifiers (letters, digits, underscores; a schema prefix
// "s.t" for the table), quoted in the statement.
type Table struct {
	Dialect     Dialect
	Name        string
	KeyColumn   string
	FenceColumn string
}

// Column is one column an update sets.
type Column struct {
	Name  string
	Value any
}

var ident = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Update sets the columns of the row whose key is key, and its fence
// column to fence, iff fence is at least the fence stored in the row, in
// one statement:
//
//	UPDATE t SET c1 = ?, …, fence = ? WHERE key = ? AND fence <= ?
//
// The statement decides; db is a *sql.Tx to make it one step of the
// caller's transaction, at any isolation level. When it changes nothing, a
// read of the row on db says why (on MySQL a locking read, which reads the
// newest row as the UPDATE did, where a plain read in a REPEATABLE READ
// transaction would read the transaction's older snapshot): no row with
// that key is fencedtype.ErrNotFound; a stored fence above the caller's is
// a *fencedtype.StaleError (Kind "resource", Name "table/key", reason
// superseded, CurrentFence the stored one; on PostgreSQL above READ
// COMMITTED the one the transaction's snapshot shows, which the UPDATE
// judged and a newer write may have raised since), and the row is
// unchanged. A stored fence not above the caller's is success on MySQL
// only, which counts a row whose values were already those written as not
// affected (unless the connection sets clientFoundRows); PostgreSQL and
// SQLite count every row matched, so there nothing was written (a trigger
// skipped the row, or a write outside the guard changed it meanwhile), and
// Update returns an error that says so.
//
// Where the database refuses the statement itself because the row changed
// after the caller's transaction took its snapshot, nothing is written and
// the error is a *ConflictError wrapping the driver's: PostgreSQL's
// serialization failure under REPEATABLE READ or SERIALIZABLE (the
// transaction is aborted), and SQLite's SQLITE_BUSY_SNAPSHOT in WAL mode.
// (In rollback-journal mode SQLite answers a transaction that read and then
// writes while another connection writes with a plain SQLITE_BUSY, which no
// busy timeout waits out: the driver's error, wrapped.) Roll back and run
// the transaction again; Update then judges the newest row. MySQL's UPDATE
// always judges the newest row, so it refuses a stale fence as stale at
// every level.
func (t Table) Update(ctx context.Context, db Execer, key any, fence int64, set ...Column) error {
	if fence < 0 {
		return fencedtype.Invalid("fence", "%d is negative", fence)
	}
	stmt, err := t.updateSQL(set)
	if err != nil {
		return err
	}
	args := make([]any, 0, len(set)+3)
	for _, c := range set {
		args = append(args, c.Value)
	}
	args = append(args, fence, key, fence)
	res, err := db.ExecContext(ctx, stmt, args...)
	if err != nil {
		return t.updateError(err, key, fence)
	}
	if n, err := res.RowsAffected(); err != nil {
		return t.updateError(err, key, fence)
	} else if n > 0 {
		return nil
	}
	var stored int64
	err = db.QueryRowContext(ctx, t.fenceSQL(), key).Scan(&stored)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fencedtype.ErrNotFound
	case err != nil:
		return t.updateError(err, key, fence)
	case stored > fence:
		return &fencedtype.StaleError{Kind: fencedtype.StaleResource, Name: fmt.Sprintf("%s/%v", t.Name, key), Fence: fence,
			CurrentFence: stored, Reason: fencedtype.ReasonSuperseded}
	case t.Dialect != MySQL:
		// PostgreSQL and SQLite count matched rows: nothing was written.
		return fmt.Errorf("fenced update of %s/%v with fence %d changed no row, though its stored fence %d is not above it "+
			"(a trigger skipped the update, or a write outside the guard changed the row meanwhile)", t.Name, key, fence, stored)
	}
	return nil // MySQL: the row already held the values written
}

// updateSQL is the one deciding statement of Update.
func (t Table) updateSQL(set []Column) (string, error) {
	if err := t.check(); err != nil {
		return "", err
	}
	if len(set) == 0 {
		return "", fencedtype.Invalid("columns", "an update sets at least one column")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "UPDATE %s SET ", t.quote(t.Name))
	n := 0
	next := func() string { n++; return t.placeholder(n) }
	for _, c := range set {
		if !ident.MatchString(c.Name) || c.Name == t.FenceColumn || c.Name == t.KeyColumn {
			return "", fencedtype.Invalid("column", "%q is not a plain identifier other than the key and fence columns", c.Name)
		}
		fmt.Fprintf(&b, "%s = %s, ", t.quote(c.Name), next())
	}
	f, k := t.quote(t.FenceColumn), t.quote(t.KeyColumn)
	fmt.Fprintf(&b, "%s = %s WHERE %s = %s AND %s <= %s", f, next(), k, next(), f, next())
	return b.String(), nil
}

// fenceSQL reads the stored fence that made Update change nothing. It must
// read the row the UPDATE judged. On MySQL it is a locking read: InnoDB's
// UPDATE judges the newest committed row, but a plain SELECT in a
// REPEATABLE READ transaction reads the snapshot of its first read, which
// can show the fence the newer holder has since replaced and so make a
// refusal look like success. PostgreSQL's UPDATE judges the version its
// snapshot shows (a newer one it would have written makes the UPDATE fail
// with a serialization error instead), and a plain read shows that same
// version, or under READ COMMITTED a newer one; a locking read there would
// only turn a refusal it can explain into a serialization failure. SQLite's
// UPDATE took the write lock, so the transaction already reads the newest
// row.
func (t Table) fenceSQL() string {
	q := fmt.Sprintf("SELECT %s FROM %s WHERE %s = %s", t.quote(t.FenceColumn), t.quote(t.Name), t.quote(t.KeyColumn), t.placeholder(1))
	if t.Dialect == MySQL {
		q += " LOCK IN SHARE MODE" // MySQL 8 and MariaDB both accept it
	}
	return q
}

func (t Table) check() error {
	switch t.Dialect {
	case Postgres, MySQL, SQLite:
	default:
		return fencedtype.Invalid("dialect", "want sqlguard.Postgres, MySQL or SQLite")
	}
	for _, part := range strings.Split(t.Name, ".") {
		if !ident.MatchString(part) {
			return fencedtype.Invalid("table", "%q is not a plain identifier (or schema.table)", t.Name)
		}
	}
	for _, c := range []string{t.KeyColumn, t.FenceColumn} {
		if !ident.MatchString(c) {
			return fencedtype.Invalid("column", "%q is not a plain identifier", c)
		}
	}
	if t.KeyColumn == t.FenceColumn {
		return fencedtype.Invalid("column", "the key and fence columns are both %q", t.KeyColumn)
	}
	return nil
}

// quote quotes a checked identifier (each part of schema.table).
func (t Table) quote(name string) string {
	q := `"`
	if t.Dialect == MySQL {
		q = "`"
	}
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = q + p + q
	}
	return strings.Join(parts, ".")
}

func (t Table) placeholder(n int) string {
	if t.Dialect == Postgres {
		return fmt.Sprintf("$%d", n)
	}
	return "?"
}
