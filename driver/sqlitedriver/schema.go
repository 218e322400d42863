package sqlitedriver

import (
	"errors"
	"regexp"

	"github.com/fenced/fenced/fencedtype"
	"modernc.org/sqlite"
)

// noSuchTable finds the fenced table SQLite's error names: "no such table:
// fenced_leases" (or main.fenced_leases).
var noSuchTable = regexp.MustCompile(`no such table: (?:\w+\.)?(fenced_\w+)`)

// notMigrated is where the driver tells a database that was not migrated:
// a statement that found one of fenced's tables missing returns a
// *fencedtype.NotMigratedError naming it instead of SQLite's "no such
// table"; other errors, nil and one already told pass unchanged. Every
// write passes its error through it (write), and every read that returns
// one.
func notMigrated(err error) error {
	var e *sqlite.Error
	var nm *fencedtype.NotMigratedError
	if err == nil || errors.As(err, &nm) || !errors.As(err, &e) || e.Code()&0xff != codeError {
		return err
	}
	m := noSuchTable.FindStringSubmatch(e.Error())
	if m == nil {
		return err
	}
	return &fencedtype.NotMigratedError{Backend: fencedtype.DialectSQLite, Table: m[1], Err: err}
}
