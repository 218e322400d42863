package chaos

import (
	"context"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/jackc/pgx/v5/pgxpool"
)

// client is a fenced Client over a PostgreSQL driver the chaos suite opened
// itself (chaos runs only on PostgreSQL), and that driver's pool: the
// suite's own statements (its tables, its checks, the connections its
// nemesis kills) use the pool it holds rather than reaching behind the
// Client.
type client struct {
	*fenced.Client
	pool *pgxpool.Pool
	d    *pgdriver.Driver
}

// openClient opens url with cfg.
func openClient(ctx context.Context, url string, cfg fenced.Config) (*client, error) {
	d, err := pgdriver.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	return &client{Client: fenced.New(d, cfg), pool: d.Pool(), d: d}, nil
}

// Close closes the client and its driver.
func (c *client) Close() error {
	c.Client.Close()
	return c.d.Close()
}
