package fenced_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fenced/fenced"
)

func TestParseDatabaseURL(t *testing.T) {
	t.Parallel()
	good := map[string][2]string{
		"":                                  {"sqlite", "fenced.db"},
		"sqlite:fenced.db":                  {"sqlite", "fenced.db"},
		"sqlite:rel/dir/x.db":               {"sqlite", "rel/dir/x.db"},
		"sqlite:///abs/x.db":                {"sqlite", "/abs/x.db"},
		"postgres://u@h:5432/db":            {"postgres", "postgres://u@h:5432/db"},
		"postgresql://u:p@h/db?sslmode=off": {"postgres", "postgresql://u:p@h/db?sslmode=off"},
	}
	for in, want := range good {
		kind, target, err := fenced.ParseDatabaseURL(in)
		if err != nil || kind != want[0] || target != want[1] {
			t.Errorf("ParseDatabaseURL(%q) = %q, %q, %v; want %q, %q", in, kind, target, err, want[0], want[1])
		}
	}
	for _, in := range []string{"fenced.db", "redis://h", "sqlite:", "sqlite://host/x.db", "sqlite:x.db?mode=ro", "postgres:db"} {
		if _, _, err := fenced.ParseDatabaseURL(in); !errors.Is(err, fenced.ErrInvalid) {
			t.Errorf("ParseDatabaseURL(%q) err = %v, want invalid", in, err)
		}
	}
}

func TestParseDatabaseURLNeverEchoesAPassword(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"postgres:u:hunter2@h/db", "u:hunter2@h/db", "hunter2"} {
		_, _, err := fenced.ParseDatabaseURL(in)
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseDatabaseURL(%q) err = %v", in, err)
		}
	}
}
