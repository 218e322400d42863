package mysqldriver

import (
	"errors"
	"net"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/fenced/fenced/fencedtype"
	"github.com/go-sql-driver/mysql"
)

// ParseURL turns a mysql:// (or mariadb://) URL into go-sql-driver/mysql's
// configuration, with the settings the driver depends on, and the pool size
// (pool_max_conns). socket=/path connects through a Unix socket instead of
// host:port. Errors never quote the URL, which may hold a password.
func ParseURL(rawURL string) (cfg *mysql.Config, maxConns int, err error) {
	invalid := func(format string, args ...any) error { return fencedtype.Invalid("database url", format, args...) }
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error quotes the whole URL
		}
		return nil, 0, invalid("%v", err)
	}
	if s := strings.ToLower(u.Scheme); (s != "mysql" && s != "mariadb") || u.Opaque != "" {
		return nil, 0, invalid("want mysql://user:pass@host:3306/db")
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return nil, 0, invalid("want one database name after the host, as in mysql://host:3306/db")
	}
	q := u.Query()
	maxConns = max(4, runtime.NumCPU())
	if v := q.Get("pool_max_conns"); v != "" {
		if maxConns, err = strconv.Atoi(v); err != nil || maxConns < 1 {
			return nil, 0, invalid("pool_max_conns %q is not a positive integer", v)
		}
	}
	q.Del("pool_max_conns")
	socket := q.Get("socket")
	q.Del("socket")
	interpolate := !q.Has("interpolateParams")
	// The rest are go-sql-driver's own parameters, parsed by its parser.
	if cfg, err = mysql.ParseDSN("/?" + q.Encode()); err != nil {
		return nil, 0, invalid("%v", err)
	}
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.DBName = db
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "3306"
	}
	cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(host, port)
	if socket != "" {
		cfg.Net, cfg.Addr = "unix", socket
	}
	if interpolate {
		// One round trip per statement instead of prepare, execute, close.
		cfg.InterpolateParams = true
	}
	cfg.ParseTime, cfg.ClientFoundRows, cfg.Loc, cfg.MultiStatements = true, true, time.UTC, false
	return cfg, maxConns, nil
}
