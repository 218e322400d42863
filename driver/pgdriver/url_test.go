package pgdriver_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/fencedtype"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"postgres://u@h:5432/db", "postgresql://u:p@h/db?sslmode=disable"} {
		if _, err := pgdriver.ParseURL(in); err != nil {
			t.Errorf("ParseURL(%q) = %v", in, err)
		}
	}
	for _, in := range []string{"postgres:db", "postgres:u:hunter2@h/db", "mysql://u:hunter2@h/db", "postgres://u:hunter2@h:x/db"} {
		_, err := pgdriver.ParseURL(in)
		if !errors.Is(err, fencedtype.ErrInvalid) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseURL(%q) err = %v, want invalid without the password", in, err)
		}
	}
}

// TestParseURLOfSeveralHosts: a URL naming a primary and its standby, to
// be followed across a promotion, keeps both hosts and the read-write
// check (pgx tries them in order and keeps the first that accepts writes).
func TestParseURLOfSeveralHosts(t *testing.T) {
	t.Parallel()
	cfg, err := pgdriver.ParseURL("postgres://u@10.0.0.1:6541,10.0.0.2:6542/db?target_session_attrs=read-write")
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.ConnConfig
	standby := false // pgx adds a fallback per host and TLS mode
	for _, f := range c.Fallbacks {
		standby = standby || f.Host == "10.0.0.2" && f.Port == 6542
	}
	if c.Host != "10.0.0.1" || c.Port != 6541 || !standby {
		t.Fatalf("hosts = %s:%d, standby among the fallbacks: %v", c.Host, c.Port, standby)
	}
	if c.ValidateConnect == nil {
		t.Fatal("target_session_attrs=read-write set no check of the session")
	}
}
