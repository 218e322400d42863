package pgdriver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/fenced/fenced/driver/drivertest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BenchmarkPgxAlone is BenchmarkFenced without fenced: each lease operation
// sends the statements the driver sends for it (its own constants, the same
// arguments) through a bare pgxpool with pgx's defaults, scanning every
// returned column into variables reused across calls. It is the limit a Go
// client on pgx reaches for these statements; bench/pgx.sh runs it
// alternated with BenchmarkFenced and reports fenced's ratio to it. The
// operations, workers, rows and connection counts are drivertest.Bench's,
// driven by the same drivertest.BenchLoop; the schema is made by the
// driver's migrations (untimed).
func BenchmarkPgxAlone(b *testing.B) {
	ops := map[string]func(b *testing.B, p *pgxpool.Pool, w int) func(context.Context) error{
		"AcquireRelease": pgxAcquireRelease,
		"Renew":          pgxRenew,
		"LeaseTx":        pgxLeaseTx,
		"ResourceWrite":  pgxResourceWrite,
	}
	for _, op := range drivertest.BenchOps {
		prepare := ops[op]
		if prepare == nil {
			b.Fatalf("no pgx-alone form of %s", op)
		}
		for _, conns := range drivertest.BenchConns {
			b.Run(fmt.Sprintf("%s/conns=%d", op, conns), func(b *testing.B) {
				p := bareBenchPool(b, conns)
				drivertest.BenchLoop(b, conns, func(w int) func(context.Context) error { return prepare(b, p, w) })
			})
		}
	}
}

var benchTTLMicros = drivertest.BenchTTL.Microseconds()

// leaseCols are the seven columns every lease statement returns.
type leaseCols struct {
	name, owner      string
	fence            int64
	expires, decided time.Time
	released, held   bool
}

func (c *leaseCols) dest() []any {
	return []any{&c.name, &c.owner, &c.fence, &c.expires, &c.released, &c.held, &c.decided}
}

func pgxAcquireRelease(b *testing.B, p *pgxpool.Pool, w int) func(context.Context) error {
	name := drivertest.BenchName("AcquireRelease", w)
	var c leaseCols
	dest := c.dest()
	return func(ctx context.Context) error {
		if err := p.QueryRow(ctx, acquireLeaseSQL, name, drivertest.BenchOwner, benchTTLMicros).Scan(dest...); err != nil {
			return err
		}
		return p.QueryRow(ctx, releaseLeaseSQL, name, drivertest.BenchOwner, c.fence).Scan(dest...)
	}
}

func pgxRenew(b *testing.B, p *pgxpool.Pool, w int) func(context.Context) error {
	name := drivertest.BenchName("Renew", w)
	fence := pgxAcquire(b, p, name)
	var c leaseCols
	dest := c.dest()
	return func(ctx context.Context) error {
		return p.QueryRow(ctx, renewLeaseSQL, name, drivertest.BenchOwner, fence, benchTTLMicros).Scan(dest...)
	}
}

func pgxLeaseTx(b *testing.B, p *pgxpool.Pool, w int) func(context.Context) error {
	name := drivertest.BenchName("LeaseTx", w)
	fence := pgxAcquire(b, p, name)
	if _, err := p.Exec(context.Background(), `INSERT INTO fenced_bench_biz (k, v) VALUES ($1, 0)`, name); err != nil {
		b.Fatal(err)
	}
	var current bool
	return func(ctx context.Context) error {
		return pgx.BeginFunc(ctx, p, func(tx pgx.Tx) error {
			if err := tx.QueryRow(ctx, leaseGuardSQL, name, drivertest.BenchOwner, fence).Scan(&current); err != nil {
				return err
			}
			if !current {
				return fmt.Errorf("lease %s not current", name)
			}
			tag, err := tx.Exec(ctx, drivertest.BenchBizSQL, name)
			if err == nil && tag.RowsAffected() != 1 {
				err = fmt.Errorf("business update matched %d rows", tag.RowsAffected())
			}
			return err
		})
	}
}

func pgxResourceWrite(b *testing.B, p *pgxpool.Pool, w int) func(context.Context) error {
	key := drivertest.BenchName("ResourceWrite", w)
	fence := pgxAcquire(b, p, key)
	value := []byte(drivertest.BenchValue)
	var gotFence, version int64
	return func(ctx context.Context) error {
		return p.QueryRow(ctx, writeResourceSQL, key, value, fence).Scan(&gotFence, &version)
	}
}

// pgxAcquire grants worker's lease name (setup, untimed) and returns its
// fence.
func pgxAcquire(b *testing.B, p *pgxpool.Pool, name string) int64 {
	b.Helper()
	var c leaseCols
	if err := p.QueryRow(context.Background(), acquireLeaseSQL, name, drivertest.BenchOwner, benchTTLMicros).Scan(c.dest()...); err != nil {
		b.Fatalf("acquire %s: %v", name, err)
	}
	return c.fence
}

// bareBenchPool migrates a fresh test schema with the driver and returns a
// plain pgxpool on it (pgxpool.ParseConfig's defaults, no fenced hooks)
// holding exactly conns connections, all connected, closed when b ends.
func bareBenchPool(b *testing.B, conns int) *pgxpool.Pool {
	b.Helper()
	ctx := context.Background()
	raw := benchSchema(b)
	d, err := Open(ctx, raw)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := d.Migrate(ctx); err != nil {
		d.Close()
		b.Fatalf("migrate: %v", err)
	}
	if _, err := d.pool.Exec(ctx, drivertest.BenchBizDDL); err != nil {
		b.Fatal(err)
	}
	d.Close()
	u, err := url.Parse(raw)
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(conns))
	u.RawQuery = q.Encode()
	p, err := pgxpool.New(ctx, u.String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	held := make([]*pgxpool.Conn, conns)
	for i := range held {
		if held[i], err = p.Acquire(ctx); err != nil {
			b.Fatalf("connect: %v", err)
		}
	}
	for _, c := range held {
		c.Release()
	}
	return p
}

// benchSchema creates a fresh schema on the test server
// (FENCED_TEST_POSTGRES_URL, default the local one), dropped when b ends,
// and returns a URL whose search_path is it: what testdb.Postgres does for
// BenchmarkFenced (testdb links every driver, so this package's own tests
// cannot import it).
func benchSchema(b *testing.B) string {
	b.Helper()
	base := os.Getenv("FENCED_TEST_POSTGRES_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	var r [6]byte
	rand.Read(r[:])
	schema := "fenced_t_" + hex.EncodeToString(r[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		b.Skipf("no PostgreSQL at %s: %v", base, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if conn, err := pgx.Connect(ctx, base); err == nil {
			conn.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`)
			conn.Close(ctx)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("application_name", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
