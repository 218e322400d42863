package mysqldriver_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/mysqldriver"
	"github.com/fenced/fenced/fencedtype"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	cfg, conns, err := mysqldriver.ParseURL("mysql://u:p%40ss@db.example:3307/app?timeout=5s&pool_max_conns=7" +
		"&clientFoundRows=false&parseTime=false&loc=Local&multiStatements=true&time_zone=%27%2B05%3A00%27")
	must(t, err, "parse")
	if cfg.User != "u" || cfg.Passwd != "p@ss" || cfg.Addr != "db.example:3307" || cfg.DBName != "app" || conns != 7 ||
		cfg.Timeout != 5*time.Second || cfg.Params["time_zone"] != "'+05:00'" {
		t.Fatalf("cfg = %+v, conns %d", cfg, conns)
	}
	if !cfg.ClientFoundRows || !cfg.ParseTime || cfg.Loc != time.UTC || cfg.MultiStatements || !cfg.InterpolateParams {
		t.Fatalf("the driver's settings were not enforced: %+v", cfg)
	}
	cfg, _, err = mysqldriver.ParseURL("mysql://root@localhost/test?socket=%2Frun%2Fmysqld%2Fmysqld.sock")
	must(t, err, "parse")
	if cfg.Net != "unix" || cfg.Addr != "/run/mysqld/mysqld.sock" || len(cfg.Params) != 0 {
		t.Fatalf("cfg = %+v", cfg)
	}
	cfg, _, err = mysqldriver.ParseURL("mariadb://root@[::1]/test?interpolateParams=false")
	must(t, err, "parse")
	if cfg.Addr != "[::1]:3306" || cfg.InterpolateParams {
		t.Fatalf("cfg = %+v", cfg)
	}
	for _, bad := range []string{
		"mysql://u:hunter2@h:3306", "mysql://u:hunter2@h:3306/", "mysql://u:hunter2@h:x/db", "mysql:u:hunter2@h/db",
		"mysql://u:hunter2@h/db?pool_max_conns=0", "mysql://u:hunter2@h/db?parseTime=maybe", "mysql://u:hunter2@h/a/b",
		"postgres://u:hunter2@h/db",
	} {
		_, _, err := mysqldriver.ParseURL(bad)
		if !errors.Is(err, fencedtype.ErrInvalid) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseURL(%q) err = %v, want invalid without the password", bad, err)
		}
	}
	for _, in := range []string{"mysql://u@h:3306/db", "MariaDB://u@h/db"} {
		if _, _, err := mysqldriver.ParseURL(in); err != nil {
			t.Errorf("ParseURL(%q) = %v", in, err)
		}
	}
	for _, bad := range []string{"mysql:u:hunter2@h/db", "mysql:hunter2"} {
		if _, err := fenced.Open(ctx(t), bad, fenced.Config{}); !errors.Is(err, fenced.ErrInvalid) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%q) err = %v", bad, err)
		}
	}
	_, err = fenced.Open(ctx(t), "mysql://u:hunter2@h:x/db", fenced.Config{})
	if !errors.Is(err, fenced.ErrInvalid) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Open err = %v", err)
	}
}
