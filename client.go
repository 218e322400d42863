package fenced

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// Config tunes a Client. The zero value works.
type Config struct {
	// Now reads the application's clock. The library decides no expiry with
	// it: expiry is always judged by the database clock inside the deciding
	// statement. It is used only for local liveness (a Keeper's trust window,
	// measured on its monotonic reading), and exists so tests can skew it.
	// Default time.Now.
	Now func() time.Time
	// Logger receives what every part of the Client does in the
	// background: the job notification listener's reconnects, and, unless
	// their own configuration names another logger, each Worker's claims,
	// heartbeats and outcome writes (and its refusal to start), each
	// Maintainer's rounds, each Campaign's retries and each Keeper's failed
	// renewals and loss. Default nil: nothing is logged.
	Logger *slog.Logger
	// EnqueueMiddleware wraps every enqueue of the Client, the first
	// outermost (see EnqueueMiddleware). Default none.
	EnqueueMiddleware []EnqueueMiddleware
	// WorkMiddleware wraps the handler of every attempt run by the Client's
	// Workers, the first outermost, outside the Worker's and the kind's
	// (see Hooks for the order). Default none.
	WorkMiddleware []WorkMiddleware
	// Hooks are called around every attempt run by the Client's Workers,
	// before the Worker's own (see Hooks). Default none.
	Hooks []Hooks
}

// Client is the user's handle on fenced: leases, fenced transactions, the
// fenced resource store and fence advance, over one backend driver, and
// the job queue and semaphores on a backend that keeps them (Supports). It
// is safe for concurrent use.
type Client struct {
	d      driver.Driver
	caps   capabilities
	now    func() time.Time
	log    *slog.Logger // Config.Logger, or one that discards
	closer bool
	waker  *jobWaker

	enqueueMW []EnqueueMiddleware
	workMW    []WorkMiddleware
	hooks     []Hooks
}

// New returns a Client over d. It asks d once for each capability beyond
// the core (Capability; the optional interfaces of package driver). Close
// does not close d.
func New(d driver.Driver, cfg Config) *Client {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	caps := assertCapabilities(d)
	return &Client{d: d, caps: caps, now: cfg.Now, log: cfg.Logger, waker: newJobWaker(caps.listener, cfg.Logger),
		enqueueMW: slices.Clone(cfg.EnqueueMiddleware), workMW: slices.Clone(cfg.WorkMiddleware), hooks: slices.Clone(cfg.Hooks)}
}

// Logger returns the logger the Client's parts log to: Config.Logger, or
// one that discards everything.
func (c *Client) Logger() *slog.Logger { return c.log }

// orLogger is log, or the Client's logger when log is nil.
func (c *Client) orLogger(log *slog.Logger) *slog.Logger {
	if log != nil {
		return log
	}
	return c.log
}

// Driver returns the backend driver.
func (c *Client) Driver() driver.Driver { return c.d }

// Migrate applies the backend's pending schema migrations and returns the
// versions applied. Safe to call concurrently and repeatedly.
func (c *Client) Migrate(ctx context.Context) ([]int, error) { return c.d.Migrate(ctx) }

// PendingMigrations returns the versions of the schema migrations the
// database has not had yet (all of them on a database never migrated). It
// only reads, so a program that only reads, or whose role or file may not
// write, can tell whether the schema is current without migrating.
func (c *Client) PendingMigrations(ctx context.Context) ([]int, error) {
	return c.d.PendingMigrations(ctx)
}

// checkMigrated returns a *NotMigratedError naming the pending migrations
// when the database has some. What runs in the background (a Worker, a
// Maintainer) checks it before it starts: on a database not migrated every
// round of it would fail, and its logger may discard what it says. With ctx
// already ended nothing will run, and nothing is checked.
func (c *Client) checkMigrated(ctx context.Context) error {
	if ctx.Err() != nil {
		return nil
	}
	pending, err := c.d.PendingMigrations(ctx)
	if err != nil {
		return err
	}
	if len(pending) > 0 {
		return &fencedtype.NotMigratedError{Backend: c.d.Dialect(), Pending: pending}
	}
	return nil
}

// DatabaseTime reads the database clock, the clock every expiry is judged
// by, in a statement of its own. It decides nothing; it is for reports (the
// HTTP service stamps it on answers whose statement returns no reading). A
// backend that cannot read its clock alone (CapClock) gives an error
// matching ErrClockNotSupported and errors.ErrUnsupported.
func (c *Client) DatabaseTime(ctx context.Context) (time.Time, error) {
	if c.caps.clock == nil {
		return time.Time{}, c.Unsupported(CapClock)
	}
	return c.caps.clock.DatabaseTime(ctx)
}

// Close closes the driver if the Client opened it (Open), else does nothing.
func (c *Client) Close() error {
	if c.closer {
		return c.d.Close()
	}
	return nil
}
