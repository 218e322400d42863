package fenced

import "github.com/fenced/fenced/fencedtype"

// Dialect names a backend by the database it speaks to: what a Client's
// Driver().Dialect() returns and what a NotMigratedError or ConnectError
// names.
type Dialect = fencedtype.Dialect

// The dialects of the backends that ship with fenced.
const (
	DialectPostgres = fencedtype.DialectPostgres
	DialectMySQL    = fencedtype.DialectMySQL
	DialectSQLite   = fencedtype.DialectSQLite
	DialectEtcd     = fencedtype.DialectEtcd
)
