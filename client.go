package fenced

import (
	"context"
	"time"

	"github.com/fenced/fenced/driver"
)

// Config tunes a Client. The zero value works.
type Config struct {
	// Now reads the application's clock. The library decides no expiry with
	// it: expiry is always judged by the database clock inside the deciding
	// statement. It is used only for local liveness (a Keeper's trust window,
	// measured on its monotonic reading), and exists so tests can skew it.
	// Default time.Now.
	Now func() time.Time
}

// Client is the user's handle on fenced: leases, fenced transactions, the
// fenced resource store and fence advance, over one backend driver. It is
// safe for concurrent use.
type Client struct {
	d      driver.Driver
	now    func() time.Time
	closer bool
}

// New returns a Client over d. Close does not close d.
func New(d driver.Driver, cfg Config) *Client {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Client{d: d, now: cfg.Now}
}

// Driver returns the backend driver.
func (c *Client) Driver() driver.Driver { return c.d }

// Migrate applies the backend's pending schema migrations and returns the
// versions applied. Safe to call concurrently and repeatedly.
func (c *Client) Migrate(ctx context.Context) ([]int, error) { return c.d.Migrate(ctx) }

// Close closes the driver if the Client opened it (Open), else does nothing.
func (c *Client) Close() error {
	if c.closer {
		return c.d.Close()
	}
	return nil
}
