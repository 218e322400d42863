package mysqldriver

import (
	"errors"
	"regexp"

	"github.com/fenced/fenced/fencedtype"
	"github.com/go-sql-driver/mysql"
)

// noSuchTable finds the fenced table MySQL's error 1146 names: Table
// 'db.fenced_leases' doesn't exist.
var noSuchTable = regexp.MustCompile(`Table '(?:[^']*\.)?(fenced_\w+)' doesn't exist`)

// notMigrated is where the driver tells a database that was not migrated:
// a statement that found one of fenced's tables missing (1146,
// ER_NO_SUCH_TABLE) returns a *fencedtype.NotMigratedError naming it;
// other errors, nil and one already told pass unchanged. Every
// transaction's error passes through it (inTxOpts), and every other
// statement's where it returns.
func notMigrated(err error) error {
	var me *mysql.MySQLError
	var nm *fencedtype.NotMigratedError
	if err == nil || errors.As(err, &nm) || !errors.As(err, &me) || me.Number != errNoSuchTable {
		return err
	}
	m := noSuchTable.FindStringSubmatch(me.Message)
	if m == nil {
		return err
	}
	return &fencedtype.NotMigratedError{Backend: fencedtype.DialectMySQL, Table: m[1], Err: err}
}
