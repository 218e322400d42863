// Package all links every backend that ships with fenced into the program,
// so that fenced.Open accepts postgres://, mysql:// (mariadb://), sqlite:
// and etcd:// URLs. Import it for its side effect:
//
//	import _ "github.com/fenced/fenced/driver/all"
//
// A program that uses one database imports that backend's package alone
// (driver/pgdriver, driver/mysqldriver, driver/sqlitedriver or
// driver/etcddriver) and does not build the others.
package all

import (
	_ "github.com/fenced/fenced/driver/etcddriver"   // etcd:// (leases and resources only)
	_ "github.com/fenced/fenced/driver/mysqldriver"  // mysql://, mariadb://
	_ "github.com/fenced/fenced/driver/pgdriver"     // postgres://, postgresql://
	_ "github.com/fenced/fenced/driver/sqlitedriver" // sqlite:, sqlite3:, file:
)
