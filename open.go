package fenced

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/mysqldriver"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/driver/sqlitedriver"
)

// DefaultDatabaseURL is the embedded SQLite file used when no URL is given.
const DefaultDatabaseURL = "sqlite:fenced.db"

// Open connects to the database named by url and returns a Client that owns
// the connection (Close closes it). It does not migrate; call Migrate.
//
//	postgres://user:pass@host:5432/db?sslmode=disable   (also postgresql://)
//	mysql://user:pass@host:3306/db                      (MySQL 8, MariaDB; also mariadb://)
//	sqlite:///absolute/path/fenced.db
//	sqlite:relative/path/fenced.db
//
// An empty url means DefaultDatabaseURL.
func Open(ctx context.Context, url string, cfg Config) (*Client, error) {
	d, err := OpenDriver(ctx, url)
	if err != nil {
		return nil, err
	}
	c := New(d, cfg)
	c.closer = true
	return c, nil
}

// OpenDriver opens the backend driver named by url (see Open).
func OpenDriver(ctx context.Context, url string) (driver.Driver, error) {
	kind, target, err := ParseDatabaseURL(url)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "postgres":
		return pgdriver.Open(ctx, target)
	case "mysql":
		return mysqldriver.Open(ctx, target)
	default:
		return sqlitedriver.Open(ctx, target)
	}
}

// ParseDatabaseURL splits a database URL into the backend ("postgres",
// "mysql" or "sqlite") and what that backend opens: the URL itself for
// PostgreSQL and MySQL, a file path for SQLite.
func ParseDatabaseURL(url string) (kind, target string, err error) {
	if url == "" {
		url = DefaultDatabaseURL
	}
	scheme, rest, ok := strings.Cut(url, ":")
	if !ok {
		return "", "", driver.Invalid("database url", "no scheme (want postgres://…, mysql://… or sqlite:PATH)")
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		if !strings.HasPrefix(rest, "//") {
			return "", "", driver.Invalid("database url", "want postgres://host/db after the scheme")
		}
		return "postgres", url, nil
	case "mysql", "mariadb":
		if !strings.HasPrefix(rest, "//") {
			return "", "", driver.Invalid("database url", "want mysql://user:pass@host:3306/db after the scheme")
		}
		return "mysql", url, nil
	case "sqlite", "sqlite3", "file":
		path := rest
		if strings.HasPrefix(path, "//") {
			// sqlite:///abs/path has an empty host; sqlite://host/… is not a file.
			path = path[2:]
			if !strings.HasPrefix(path, "/") {
				// The URL is not quoted back: it may hold a password.
				return "", "", driver.Invalid("database url", "sqlite://HOST/… names no file: use sqlite:///absolute/path or sqlite:relative/path")
			}
		}
		if path == "" || strings.ContainsAny(path, "?#\x00") {
			return "", "", driver.Invalid("database url", "want sqlite:PATH with no query, fragment or NUL byte")
		}
		return "sqlite", filepath.Clean(path), nil
	default:
		return "", "", driver.Invalid("database url", "unknown scheme %q (want postgres, mysql or sqlite)", scheme)
	}
}
