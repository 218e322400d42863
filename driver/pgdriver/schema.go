package pgdriver

import (
	"errors"
	"regexp"

	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5/pgconn"
)

// undefinedTable finds the fenced table PostgreSQL's undefined_table error
// names: relation "fenced_leases" does not exist (or "schema.fenced_…").
var undefinedTable = regexp.MustCompile(`relation "(?:[^"]*\.)?(fenced_\w+)" does not exist`)

// notMigrated is where the driver tells a database that was not migrated:
// a statement that found one of fenced's tables missing (undefined_table,
// 42P01) returns a *fencedtype.NotMigratedError naming it; other errors,
// nil and one already told pass unchanged. Every call through the pool
// passes its error through it (retry), and so does every transaction's
// (inTx).
func notMigrated(err error) error {
	if err == nil {
		return nil // before the declarations below, which escape to the heap
	}
	var pe *pgconn.PgError
	var nm *fencedtype.NotMigratedError
	if errors.As(err, &nm) || !errors.As(err, &pe) || pe.Code != "42P01" {
		return err
	}
	m := undefinedTable.FindStringSubmatch(pe.Message)
	if m == nil {
		return err
	}
	return &fencedtype.NotMigratedError{Backend: fencedtype.DialectPostgres, Table: m[1], Err: err}
}
