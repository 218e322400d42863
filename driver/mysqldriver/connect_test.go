package mysqldriver_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/fenced/fenced/driver/mysqldriver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/test/testdb"
)

// TestConnectErrorsAreOneLine: a server that cannot be reached, or refuses
// the session, fails Open with one line naming the address and the cause,
// the same shape as on PostgreSQL, with no password.
func TestConnectErrorsAreOneLine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := mysqldriver.Open(ctx, "mysql://nobody:s3cret-pw@127.0.0.1:1/x")
	var ce *fencedtype.ConnectError
	if !errors.As(err, &ce) {
		t.Fatalf("open on a closed port = %v, want a *ConnectError", err)
	}
	if got, want := err.Error(), "cannot connect to mysql at 127.0.0.1:1: connection refused"; got != want {
		t.Errorf("closed port:\n got %q\nwant %q", got, want)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("the dial error is not reachable from %v", err)
	}

	// A server that answers but refuses the session: its own message.
	u, err := url.Parse(testdb.MySQL(t)) // skips, outside CI, when there is no server
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/no_such_db_x"
	_, err = mysqldriver.Open(ctx, u.String())
	if !errors.As(err, &ce) || ce.Cause != "Unknown database 'no_such_db_x'" || strings.Contains(err.Error(), "Error 1049") {
		t.Errorf("unknown database = %v, want one line saying the database is unknown", err)
	}
}
