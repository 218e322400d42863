// Package pgdriver is the PostgreSQL backend of fenced, through pgx v5.
//
// Expiry is judged by clock_timestamp(), read once per deciding statement.
// Every grant commits synchronously: a connection that would run with
// synchronous_commit=off (from any source) is switched back on after it
// connects, since a grant lost in a crash would be granted twice.
package pgdriver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/queueset"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Driver implements driver.Driver on a pgx pool.
type Driver struct {
	pool  *pool
	owned bool
	// limited holds the queues whose last claim went the limited way, so
	// that their next claim skips the single statement (which would only
	// find the gate again) and goes straight to claimLimitedJobs; a
	// limited claim that picked no keyed job in a queue with no global
	// limit takes the queue out.
	limited queueset.Set
	// noFullKeys holds the queues whose limited claims pick without the
	// full keys (reading them costs a pass over the queue's running keyed
	// jobs): a queue goes in when a round that read them found none full
	// and admitted every candidate it picked (but its window's spare ones),
	// and out when a round without them could not.
	noFullKeys queueset.Set
	// sweep is the floor of recovery's sweeps (recoverySweep).
	sweep recoverySweep
	// laneMarked holds, by queue, when a claim by kind last held its lane
	// locks (claimLanes).
	laneMarked sync.Map
	// vacuumed holds the horizon of TidyJobs' last vacuum.
	vacuumed struct {
		sync.Mutex
		horizon string
	}
}

var _ driver.Driver = (*Driver)(nil)

// New wraps an existing pool. Close does not close it. The pool must commit
// durably: a pool whose connections run with synchronous_commit=off could
// lose a grant in a crash and grant it twice, and its transactions must
// default to READ COMMITTED (OpenConfig guards against both; a pool built
// elsewhere must do so itself).
func New(p *pgxpool.Pool) *Driver { return &Driver{pool: newPool(p)} }

func init() {
	driver.Register(func(ctx context.Context, url string) (driver.Driver, error) { return Open(ctx, url) },
		"postgres", "postgresql")
}

// Open connects to a PostgreSQL URL (postgres://…); Close closes the pool.
func Open(ctx context.Context, url string) (*Driver, error) {
	cfg, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	return OpenConfig(ctx, cfg)
}

// OpenConfig connects with a parsed pool configuration; Close closes the
// pool. It makes one connection before it returns, so an unreachable server
// or a refused login is a *fencedtype.ConnectError here, not a failure of
// the first operation.
func OpenConfig(ctx context.Context, cfg *pgxpool.Config) (*Driver, error) {
	keepSynchronousCommit(cfg)
	keepReadCommitted(cfg)
	scanInUTC(cfg)
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect postgres: %w", err)
	}
	if err := p.Ping(ctx); err != nil {
		p.Close()
		return nil, connectError(cfg, err)
	}
	d := &Driver{pool: newPool(p), owned: true}
	d.pool.reached.Store(true) // the ping: from now on a failover is waited out
	return d, nil
}

// keepSynchronousCommit makes every connection commit grants durably: after
// connecting, whatever set synchronous_commit (the URL, an options=-c
// switch, a role or database default, the server's configuration), a value
// of off or local is raised to on. Stronger settings (remote_write,
// remote_apply) are kept.
func keepSynchronousCommit(cfg *pgxpool.Config) {
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if after != nil {
			if err := after(ctx, conn); err != nil {
				return err
			}
		}
		var v string
		if err := conn.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&v); err != nil {
			return err
		}
		if v == "off" || v == "local" {
			_, err := conn.Exec(ctx, `SET synchronous_commit = on`)
			return err
		}
		return nil
	}
}

// keepReadCommitted makes every connection's transactions READ COMMITTED by
// default, whatever the URL or a role or database default says: each single
// statement decides on the newest version of a row it waited for, where under
// REPEATABLE READ or SERIALIZABLE contending acquires and claims failed with
// serialization errors instead of *HeldError or other jobs. A caller's own
// transaction on Pool() chooses its level with pgx.TxOptions.
func keepReadCommitted(cfg *pgxpool.Config) {
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if after != nil {
			if err := after(ctx, conn); err != nil {
				return err
			}
		}
		_, err := conn.Exec(ctx, `SET default_transaction_isolation = 'read committed'`)
		return err
	}
}

// scanInUTC makes every timestamptz the driver reads a time in UTC, as the
// other backends give them, whatever the process's local zone (pgx reads
// them in time.Local by default); the instant is the same either way.
func scanInUTC(cfg *pgxpool.Config) {
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if after != nil {
			if err := after(ctx, conn); err != nil {
				return err
			}
		}
		conn.TypeMap().RegisterType(&pgtype.Type{Name: "timestamptz", OID: pgtype.TimestamptzOID,
			Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC}})
		return nil
	}
}

// Pool returns the driver's pool, for the caller's own queries.
func (d *Driver) Pool() *pgxpool.Pool { return d.pool.Pool }

// Dialect returns fencedtype.DialectPostgres.
func (d *Driver) Dialect() fencedtype.Dialect { return fencedtype.DialectPostgres }

// Close closes the pool when the driver opened it.
func (d *Driver) Close() error {
	if d.owned {
		d.pool.Close()
	}
	return nil
}
