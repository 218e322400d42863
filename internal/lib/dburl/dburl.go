// Package dburl names the backend that ships with fenced for each database
// URL scheme, without opening anything: for messages that name the package
// to import, and for commands that tune a URL before opening it.
package dburl

import (
	"strings"

	"github.com/fenced/fenced/fencedtype"
)

// DefaultURL is the embedded SQLite file used when no URL is given.
const DefaultURL = "sqlite:fenced.db"

// backends maps each built-in scheme to its backend's dialect.
var backends = map[string]fencedtype.Dialect{
	"postgres": fencedtype.DialectPostgres, "postgresql": fencedtype.DialectPostgres,
	"mysql": fencedtype.DialectMySQL, "mariadb": fencedtype.DialectMySQL,
	"sqlite": fencedtype.DialectSQLite, "sqlite3": fencedtype.DialectSQLite, "file": fencedtype.DialectSQLite,
	"etcd": fencedtype.DialectEtcd,
}

// Backend is the dialect of the built-in backend that opens url's scheme,
// or "" for another scheme. An empty url is DefaultURL.
func Backend(url string) fencedtype.Dialect {
	if url == "" {
		url = DefaultURL
	}
	scheme, _, ok := strings.Cut(url, ":")
	if !ok {
		return ""
	}
	return backends[strings.ToLower(scheme)]
}

// Package is the import path of a built-in backend by its dialect.
func Package(dialect fencedtype.Dialect) string {
	switch dialect {
	case fencedtype.DialectPostgres:
		return "github.com/fenced/fenced/driver/pgdriver"
	case fencedtype.DialectMySQL:
		return "github.com/fenced/fenced/driver/mysqldriver"
	case fencedtype.DialectSQLite:
		return "github.com/fenced/fenced/driver/sqlitedriver"
	case fencedtype.DialectEtcd:
		return "github.com/fenced/fenced/driver/etcddriver"
	}
	return ""
}
