package chaos

import "github.com/fenced/fenced"

// client is a fenced Client over a driver the chaos suite opened itself
// (backend.open), and that driver's pool: the suite's own statements (its
// tables, its checks, the sessions its nemesis kills) use the pool it holds
// rather than reaching behind the Client.
type client struct {
	*fenced.Client
	db          querier
	closeDriver func() error
}

// Close closes the client and its driver.
func (c *client) Close() error {
	c.Client.Close()
	return c.closeDriver()
}
