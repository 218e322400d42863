package fenced

import (
	"context"
	"strings"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/lib/dburl"
)

// DefaultDatabaseURL is the embedded SQLite file used when no URL is given.
const DefaultDatabaseURL = dburl.DefaultURL

// Open connects to the database named by url and returns a Client that owns
// the connection (Close closes it). It does not migrate; call Migrate.
//
//	postgres://user:pass@host:5432/db?sslmode=disable   (also postgresql://)
//	mysql://user:pass@host:3306/db                      (MariaDB, MySQL 8; also mariadb://)
//	sqlite:///absolute/path/fenced.db
//	sqlite:relative/path/fenced.db
//	etcd://host:2379,host:2379/prefix                  (leases, fences and resources only)
//
// An empty url means DefaultDatabaseURL. The backend of a scheme must be
// linked into the program by importing its package (driver/pgdriver,
// driver/mysqldriver, driver/sqlitedriver, driver/etcddriver, or driver/all
// for every one);
// otherwise Open refuses the URL with an *InvalidError naming the import.
// A backend package can also be used without a URL: New(pgdriver.New(pool), cfg).
func Open(ctx context.Context, url string, cfg Config) (*Client, error) {
	d, err := OpenDriver(ctx, url)
	if err != nil {
		return nil, err
	}
	c := New(d, cfg)
	c.closer = true
	return c, nil
}

// OpenDriver opens the backend driver named by url (see Open) through the
// Opener its scheme registered.
func OpenDriver(ctx context.Context, url string) (driver.Driver, error) {
	if url == "" {
		url = DefaultDatabaseURL
	}
	scheme, _, ok := strings.Cut(url, ":")
	if !ok || scheme == "" {
		return nil, fencedtype.Invalid("database url", "no scheme (want postgres://…, mysql://…, sqlite:PATH or etcd://…)")
	}
	open, ok := driver.Lookup(scheme)
	if ok {
		d, err := open(ctx, url)
		if err != nil {
			return nil, err // a nil Driver, not a driver's typed nil
		}
		return d, nil
	}
	if dialect := dburl.Backend(url); dialect != "" {
		return nil, fencedtype.Invalid("database url", "no %s backend is linked into this program: import _ %q (or %q for every backend)",
			dialect, dburl.Package(dialect), "github.com/fenced/fenced/driver/all")
	}
	return nil, fencedtype.Invalid("database url", "unknown scheme %q (want postgres, mysql, sqlite or etcd; linked here: %s)", scheme, strings.Join(driver.Schemes(), ", "))
}
