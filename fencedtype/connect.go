package fencedtype

import "fmt"

// ConnectError reports that the database could not be reached or opened,
// in one line that names the backend, where it was looked for and the cause
// in plain words, and never a password:
//
//	cannot connect to postgres at 127.0.0.1:1: connection refused
//	cannot connect to mysql at db:3306: Access denied for user 'app'@'10.0.0.7'
//	cannot open sqlite database /srv/x/fenced.db: directory /srv/x does not exist
//	cannot connect to etcd at e1:2379,e2:2379: no member accepted a connection (e1:2379: connection refused; e2:2379: no such host e2)
//
// The backend's own error stays reachable with errors.Is and errors.As.
type ConnectError struct {
	Backend Dialect // DialectPostgres, DialectMySQL, DialectSQLite or DialectEtcd
	Address string  // host:port, a socket path, the SQLite file, or etcd's members (host:port,…)
	Cause   string  // what went wrong, as a person would say it
	Err     error   // the backend's error
}

func (e *ConnectError) Error() string {
	if e.Backend == DialectSQLite {
		return fmt.Sprintf("cannot open sqlite database %s: %s", e.Address, e.Cause)
	}
	return fmt.Sprintf("cannot connect to %s at %s: %s", e.Backend, e.Address, e.Cause)
}

// Unwrap returns the backend's error.
func (e *ConnectError) Unwrap() error { return e.Err }
