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
