package mysqldriver

import (
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/fenced/fenced/fencedtype"
)

// FuzzParseURL: ParseURL never panics, refuses with ErrInvalid without ever
// quoting the password, and an accepted URL is a mysql:// or mariadb:// URL
// whose user, password, database and address are the ones written, with the
// settings the driver depends on.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"mysql://root@127.0.0.1:3306/test", "mariadb://u:hunter2@h/db", "MYSQL://h/db", "mysql://h", "mysql://h/",
		"mysql://h/a/b", "mysql:db", "mysql:///db", "postgres://h/db", "mysql://u:hunter2@h:99999/db",
		"mysql://u:hunter2@[::1]:3306/db", "mysql://u:hunter2@h/db?pool_max_conns=0", "mysql://u:hunter2@h/db?pool_max_conns=x",
		"mysql://u:hunter2@h/db?pool_max_conns=8&socket=/run/mysqld.sock", "mysql://u:hunter2@h/db?timeout=bogus",
		"mysql://u:hunter2@h/db?interpolateParams=false", "mysql://u:hunter2@h/db?multiStatements=true",
		"mysql://u:hunter2@h/db?parseTime=false&loc=Local&clientFoundRows=false", "mysql://u:hunter2@h/db?tls=bogus",
		"mysql://u:hunter2@h/db?%zz", "mysql://u:hunter2@h:port/db", "mysql://u:hun%zzter2@h/db", "mysql://u:hunter2@h/db%2Fx",
		"mysql://u:p%40ss@h/db", "mysql://u:hunter2@h/db?charset=latin1", "mysql://u:hunter2@h/db#frag", "\x00",
		"mysql://u:hunter2@h/db?maxAllowedPacket=-1", "mysql://u:hunter2@h/db?collation=bogus",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		cfg, maxConns, err := ParseURL(raw)
		if err != nil {
			var inv *fencedtype.InvalidError
			if !errors.Is(err, fencedtype.ErrInvalid) || !errors.As(err, &inv) || inv.Field != "database url" {
				t.Fatalf("ParseURL(%q) = %v (%T), not an invalid database url", raw, err, err)
			}
			if cfg != nil || maxConns != 0 {
				t.Fatalf("ParseURL(%q) failed but returned a config", raw)
			}
			if pw := secret(raw); pw != "" && strings.Contains(err.Error(), pw) {
				t.Fatalf("ParseURL(%q) error %q quotes the password %q", raw, err, pw)
			}
			return
		}
		u, perr := url.Parse(raw)
		if perr != nil {
			t.Fatalf("ParseURL accepted %q, which net/url refuses: %v", raw, perr)
		}
		if s := strings.ToLower(u.Scheme); s != "mysql" && s != "mariadb" {
			t.Fatalf("ParseURL(%q) accepted scheme %q", raw, u.Scheme)
		}
		pw, _ := u.User.Password()
		if cfg.User != u.User.Username() || cfg.Passwd != pw || "/"+cfg.DBName != u.Path || cfg.DBName == "" ||
			strings.Contains(cfg.DBName, "/") {
			t.Fatalf("ParseURL(%q): user %q db %q", raw, cfg.User, cfg.DBName)
		}
		if maxConns < 1 {
			t.Fatalf("ParseURL(%q): pool of %d", raw, maxConns)
		}
		if !cfg.ParseTime || !cfg.ClientFoundRows || cfg.MultiStatements || cfg.Loc == nil || cfg.Loc.String() != "UTC" {
			t.Fatalf("ParseURL(%q) lost a setting the driver depends on: %+v", raw, cfg)
		}
		switch socket := u.Query().Get("socket"); {
		case socket != "":
			if cfg.Net != "unix" || cfg.Addr != socket {
				t.Fatalf("ParseURL(%q): socket %q gave %s %s", raw, socket, cfg.Net, cfg.Addr)
			}
		default:
			host, port, err := net.SplitHostPort(cfg.Addr)
			if cfg.Net != "tcp" || err != nil || host == "" || port == "" {
				t.Fatalf("ParseURL(%q): address %s %q (%v)", raw, cfg.Net, cfg.Addr, err)
			}
			if h := u.Hostname(); h != "" && h != host {
				t.Fatalf("ParseURL(%q): host %q, want %q", raw, host, h)
			}
		}
		if !u.Query().Has("interpolateParams") && !cfg.InterpolateParams {
			t.Fatalf("ParseURL(%q): interpolateParams not defaulted on", raw)
		}
	})
}

// secret is the password url.Parse finds in raw, if long enough to search
// for; for a URL net/url refuses, the text between "://user:" and "@".
func secret(raw string) string {
	var pw string
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		pw, _ = u.User.Password()
	} else if _, rest, ok := strings.Cut(raw, "://"); ok {
		if userinfo, _, ok := strings.Cut(rest, "@"); ok {
			_, pw, _ = strings.Cut(userinfo, ":")
		}
	}
	if len(pw) < 4 {
		return ""
	}
	return pw
}
