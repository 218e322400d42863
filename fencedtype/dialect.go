package fencedtype

// Dialect names a backend by the database it speaks to: what
// Driver.Dialect returns, what a NotMigratedError or ConnectError names,
// and the dialect of a user's table for sqlguard.
type Dialect string

// The dialects of the backends that ship with fenced.
const (
	DialectPostgres Dialect = "postgres" // PostgreSQL
	DialectMySQL    Dialect = "mysql"    // MySQL 8 and MariaDB
	DialectSQLite   Dialect = "sqlite"   // embedded SQLite
	DialectEtcd     Dialect = "etcd"     // etcd v3 (no SQL: leases, fences and resources)
)
