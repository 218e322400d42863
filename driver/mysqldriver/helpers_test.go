package mysqldriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/testdb"
)

// The dialect's own quirks. Behaviour shared by every backend is in the
// conformance suite.

// setup makes a fresh migrated database and returns its URL and a client.
func setup(t *testing.T) (string, *fenced.Client) {
	t.Helper()
	url := testdb.MySQL(t)
	return url, open(t, url)
}

func open(t *testing.T, url string) *fenced.Client {
	t.Helper()
	c, err := fenced.Open(context.Background(), url, fenced.Config{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// frozen is a session setting that stops the database clock of every
// connection at one instant: SET timestamp fixes NOW() and UTC_TIMESTAMP().
const frozen = "1800000000.123456"
