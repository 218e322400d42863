// Package pgdriver is the PostgreSQL backend of fenced, through pgx v5.
//
// Expiry is judged by clock_timestamp(), read once per deciding statement.
// Every grant commits synchronously: a connection configured with
// synchronous_commit=off is switched back on, since a grant lost in a crash
// would be granted twice.
package pgdriver

import (
	"context"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Driver implements driver.Driver on a pgx pool.
type Driver struct {
	pool  *pgxpool.Pool
	owned bool
}

var _ driver.Driver = (*Driver)(nil)

// New wraps an existing pool. Close does not close it.
func New(pool *pgxpool.Pool) *Driver { return &Driver{pool: pool} }

// Open connects to a PostgreSQL URL (postgres://…); Close closes the pool.
func Open(ctx context.Context, url string) (*Driver, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, &driver.InvalidError{Field: "database url", Reason: err.Error()}
	}
	return OpenConfig(ctx, cfg)
}

// OpenConfig connects with a parsed pool configuration; Close closes the pool.
func OpenConfig(ctx context.Context, cfg *pgxpool.Config) (*Driver, error) {
	if v := cfg.ConnConfig.RuntimeParams["synchronous_commit"]; v == "off" {
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect postgres: %w", err)
	}
	return &Driver{pool: pool, owned: true}, nil
}

// Pool returns the driver's pool, for the caller's own queries.
func (d *Driver) Pool() *pgxpool.Pool { return d.pool }

// Dialect returns "postgres".
func (d *Driver) Dialect() string { return "postgres" }

// Close closes the pool when the driver opened it.
func (d *Driver) Close() error {
	if d.owned {
		d.pool.Close()
	}
	return nil
}
