// Package dburl names the backend that ships with fenced for each database
// URL scheme, without opening anything: for messages that name the package
// to import, and for commands that tune a URL before opening it.
package dburl

import "strings"

// DefaultURL is the embedded SQLite file used when no URL is given.
const DefaultURL = "sqlite:fenced.db"

// backends maps each built-in scheme to its backend's dialect.
var backends = map[string]string{
	"postgres": "postgres", "postgresql": "postgres",
	"mysql": "mysql", "mariadb": "mysql",
	"sqlite": "sqlite", "sqlite3": "sqlite", "file": "sqlite",
	"etcd": "etcd",
}

// Backend is the dialect ("postgres", "mysql", "sqlite" or "etcd") of the built-in
// backend that opens url's scheme, or "" for another scheme. An empty url
// is DefaultURL.
func Backend(url string) string {
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
func Package(dialect string) string {
	switch dialect {
	case "postgres":
		return "github.com/fenced/fenced/driver/pgdriver"
	case "mysql":
		return "github.com/fenced/fenced/driver/mysqldriver"
	case "sqlite":
		return "github.com/fenced/fenced/driver/sqlitedriver"
	case "etcd":
		return "github.com/fenced/fenced/driver/etcddriver"
	}
	return ""
}
