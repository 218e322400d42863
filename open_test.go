package fenced_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenced/fenced"
	_ "github.com/fenced/fenced/driver/pgdriver"
	_ "github.com/fenced/fenced/driver/sqlitedriver"
)

// TestOpenDispatchesBySchemeAndRefusesTheRest: a scheme no backend
// registered, or a URL with no scheme, is invalid input; a registered one
// reaches its backend, whose own parse refuses what it cannot open.
func TestOpenDispatchesBySchemeAndRefusesTheRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := fenced.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "x.db"), fenced.Config{})
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	if got := c.Driver().Dialect(); got != "sqlite" {
		t.Errorf("dialect = %q, want sqlite", got)
	}
	c.Close()
	for _, in := range []string{"fenced.db", "redis://h", "sqlite:", "sqlite://host/x.db", "sqlite:x.db?mode=ro", ":x"} {
		if _, err := fenced.Open(ctx, in, fenced.Config{}); !errors.Is(err, fenced.ErrInvalid) {
			t.Errorf("Open(%q) err = %v, want invalid", in, err)
		}
	}
	// A backend that refuses its URL gives no driver at all: not a nil
	// pointer of its own type inside a non-nil interface, which a caller's
	// "d != nil" cleanup would call Close on.
	if d, err := fenced.OpenDriver(ctx, "postgres://127.0.0.1/db?pool_max_conns=many"); err == nil || d != nil {
		t.Errorf("OpenDriver of a refused URL = %v, %v; want nil and an error", d, err)
	}
}

func TestOpenNeverEchoesAPassword(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"postgres:u:hunter2@h/db", "u:hunter2@h/db", "hunter2", "sqlite://u:hunter2@h/x.db"} {
		_, err := fenced.Open(context.Background(), in, fenced.Config{})
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%q) err = %v", in, err)
		}
	}
}
