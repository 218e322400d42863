package pgdriver

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// connectError describes a failure to connect to the server cfg names, in
// one line: the address and the cause, without pgx's per-attempt prefixes
// (it tries each fallback, such as TLS then plain, and reports every
// attempt).
func connectError(cfg *pgxpool.Config, err error) error {
	return &fencedtype.ConnectError{Backend: fencedtype.DialectPostgres, Address: address(cfg.ConnConfig.Host, cfg.ConnConfig.Port),
		Cause: connectCause(err), Err: err}
}

// address is where a connection goes: host:port, or the socket file in a
// directory host.
func address(host string, port uint16) string {
	if strings.HasPrefix(host, "/") {
		return filepath.Join(host, fmt.Sprintf(".s.PGSQL.%d", port))
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// connectCause is the server's own message when it refused the session
// (no such role or database, authentication failed), else the network's
// cause, else the first attempt's error.
func connectCause(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Message
	}
	if cause := driver.NetCause(err); cause != "" {
		return cause
	}
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) {
		return err.Error()
	}
	inner := ce.Unwrap()
	if joined, ok := inner.(interface{ Unwrap() []error }); ok && len(joined.Unwrap()) > 0 {
		inner = joined.Unwrap()[0]
	}
	if attempt := errors.Unwrap(inner); attempt != nil {
		inner = attempt // drop the attempt's "host:port (host):" prefix
	}
	return inner.Error()
}
