package mysqldriver

import (
	"errors"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/go-sql-driver/mysql"
)

// connectError describes a failure to connect to the server cfg names, in
// one line: the address and the cause.
func connectError(cfg *mysql.Config, err error) error {
	return &fencedtype.ConnectError{Backend: fencedtype.DialectMySQL, Address: cfg.Addr, Cause: connectCause(err), Err: err}
}

// connectCause is the server's own message when it refused the session
// (access denied, unknown database), else the network's cause, else the
// error as the client library wrote it.
func connectCause(err error) string {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Message
	}
	if cause := driver.NetCause(err); cause != "" {
		return cause
	}
	return err.Error()
}
