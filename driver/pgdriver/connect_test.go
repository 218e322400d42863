package pgdriver_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/test/testdb"
)

// TestConnectErrorsAreOneLine: a server that cannot be reached, or refuses
// the session, fails Open with one line naming the address and the cause,
// once (pgx tries TLS, then plain, and reports both), with no password.
func TestConnectErrorsAreOneLine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := pgdriver.Open(ctx, "postgres://nobody:s3cret-pw@127.0.0.1:1/x")
	var ce *fencedtype.ConnectError
	if !errors.As(err, &ce) {
		t.Fatalf("open on a closed port = %v, want a *ConnectError", err)
	}
	if got, want := err.Error(), "cannot connect to postgres at 127.0.0.1:1: connection refused"; got != want {
		t.Errorf("closed port:\n got %q\nwant %q", got, want)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("the dial error is not reachable from %v", err)
	}

	// A server that answers but refuses the login: its own message.
	u, err := url.Parse(testdb.Postgres(t)) // skips, outside CI, when there is no server
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User("no_such_role_x")
	_, err = pgdriver.Open(ctx, u.String())
	if !errors.As(err, &ce) || ce.Cause != `role "no_such_role_x" does not exist` || strings.Count(err.Error(), "no_such_role_x") != 1 {
		t.Errorf("unknown role = %v, want one line saying the role does not exist", err)
	}
}
