package pgdriver_test

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/internal/test/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

// viaProxy opens a client on a fresh database through a proxy that the
// test can take down, with one connection in the pool.
func viaProxy(t *testing.T) (*fenced.Client, *testdb.Proxy) {
	t.Helper()
	u, err := url.Parse(testdb.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	p := testdb.NewProxy(t, u.Host)
	u.Host = p.Addr()
	q := u.Query()
	q.Set("pool_max_conns", "1")
	u.RawQuery = q.Encode()
	c, err := fenced.Open(context.Background(), u.String(), fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c, p
}

// TestACallWaitsOutAFailover: while the database cannot be reached (its
// connections cut, new ones refused, as while a standby is being promoted)
// a call is made again until the database is back, and then succeeds.
func TestACallWaitsOutAFailover(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	c, p := viaProxy(t)
	l, err := c.AcquireLease(ctx, "report", "A", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	p.Down()
	up := make(chan struct{})
	go func() {
		time.Sleep(2500 * time.Millisecond)
		p.Up()
		close(up)
	}()
	// The pool checks a connection idle for a second before using it, and
	// finds this one dead: the renew is sent on no dead connection. (One
	// used within the last second would carry it, and its outcome would be
	// unknown, as TestALostReplyIsAnUnknownOutcome shows.)
	time.Sleep(1200 * time.Millisecond)
	renewed, err := c.RenewLease(ctx, *l, time.Minute)
	if err != nil {
		t.Fatalf("renew across the outage: %v", err)
	}
	select {
	case <-up:
	default:
		t.Fatal("the renew returned before the database was back")
	}
	if renewed.Fence != l.Fence {
		t.Fatalf("renewed fence %d, want %d", renewed.Fence, l.Fence)
	}
}

// TestALostReplyIsAnUnknownOutcome: a statement that ran but whose reply
// was lost with its connection is reported as neither a success nor stale
// but ErrUnknownOutcome; it did commit here, and the same owner's acquire
// made again keeps the fence it was granted.
func TestALostReplyIsAnUnknownOutcome(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	c, p := viaProxy(t)
	// Once, so the one connection has the statement prepared: the reply cut
	// next is the one to the statement's execution.
	if _, err := c.AcquireLease(ctx, "warm", "A", time.Minute); err != nil {
		t.Fatal(err)
	}
	p.CutNextReply()
	_, err := c.AcquireLease(ctx, "report", "A", time.Minute)
	var se *fenced.StaleError
	if !errors.Is(err, fenced.ErrUnknownOutcome) || errors.As(err, &se) {
		t.Fatalf("acquire whose reply was lost: %v, want ErrUnknownOutcome", err)
	}
	got, err := c.GetLease(ctx, "report")
	if err != nil || !got.Held || got.Owner != "A" || got.Fence != 1 {
		t.Fatalf("after the lost reply: %+v, %v; want held by A with fence 1", got, err)
	}
	again, err := c.AcquireLease(ctx, "report", "A", time.Minute)
	if err != nil || again.Fence != 1 {
		t.Fatalf("acquire again: %+v, %v; want the same fence 1", again, err)
	}
}

// TestADatabaseNeverReachedFailsAtOnce: a database that was never reached
// is not waited for: a pool given to New that never connected returns the
// connection error on its first call, not a context deadline.
func TestADatabaseNeverReachedFailsAtOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:1/test?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := fenced.New(pgdriver.New(p), fenced.Config{})
	_, err = c.GetLease(ctx, "report")
	if err == nil || errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Fatalf("err = %v, want the connection's error at once", err)
	}
}
