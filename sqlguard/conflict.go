package sqlguard

import (
	"errors"
	"fmt"
)

// ErrConflict matches every *ConflictError.
var ErrConflict = errors.New("the row changed after the transaction's snapshot")

// ConflictError is returned when the database refused Update's statement
// because the row was changed by a transaction that committed after the
// caller's transaction took its snapshot: PostgreSQL's serialization
// failure (SQLSTATE 40001, under REPEATABLE READ or SERIALIZABLE; a driver
// error with a SQLState method, as pgx's *pgconn.PgError and lib/pq's
// *pq.Error have) or SQLite's SQLITE_BUSY_SNAPSHOT (a WAL-mode transaction
// that read before another connection's commit, then writes; a driver
// error with a Code method giving the extended code, as modernc.org/sqlite's
// has). Nothing was written, and the transaction cannot go on: PostgreSQL
// has aborted it, and SQLite's can read only its old snapshot. Roll it back
// and run it again: in a new transaction Update judges the newest row,
// and returns *fencedtype.StaleError if a higher fence was stored
// meanwhile. A conflict alone does not say that the caller's fence is
// stale: any write of the row conflicts, even one of the caller's own.
type ConflictError struct {
	Table string // the table's name
	Key   any    // the row's key
	Fence int64  // the caller's fence
	Err   error  // the driver's error
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("fenced update of %s/%v with fence %d refused: the row changed after this transaction's snapshot; "+
		"roll back and run the transaction again: %v", e.Table, e.Key, e.Fence, e.Err)
}

// Unwrap returns the driver's error.
func (e *ConflictError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// sqliteBusySnapshot is SQLITE_BUSY_SNAPSHOT, SQLite's extended result code
// for a write refused because the transaction's snapshot is not the newest.
const sqliteBusySnapshot = 517

// updateError is a statement's error as Update returns it: a
// *ConflictError when it is the dialect's refusal of a write to a row
// changed after the transaction's snapshot, and err wrapped with the
// table's name otherwise.
func (t Table) updateError(err error, key any, fence int64) error {
	switch t.Dialect {
	case Postgres:
		var pe interface{ SQLState() string }
		if errors.As(err, &pe) && pe.SQLState() == "40001" {
			return &ConflictError{Table: t.Name, Key: key, Fence: fence, Err: err}
		}
	case SQLite:
		var se interface{ Code() int }
		if errors.As(err, &se) && se.Code() == sqliteBusySnapshot {
			return &ConflictError{Table: t.Name, Key: key, Fence: fence, Err: err}
		}
	}
	return fmt.Errorf("fenced update of %s: %w", t.Name, err)
}
