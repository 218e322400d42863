// Command setup prepares the PostgreSQL schema the pgbench scripts in
// bench/pgbench run against: it drops and recreates the schema, migrates it
// with fenced's own migrations, and gives each pgbench client the rows the
// Go benchmarks (drivertest.Bench) prepare for their workers — the same
// names, owner, TTL and business table, each lease at fence 1.
//
//	go run ./bench/setup -url postgres://postgres@127.0.0.1:5432/test -schema fenced_bench -clients 16
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/drivertest"
	_ "github.com/fenced/fenced/driver/pgdriver" // the PostgreSQL backend
	"github.com/jackc/pgx/v5"
)

func main() {
	base := flag.String("url", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "PostgreSQL server URL")
	schema := flag.String("schema", "fenced_bench", "schema to (re)create")
	clients := flag.Int("clients", 16, "pgbench clients to prepare rows for")
	flag.Parse()
	if err := setup(context.Background(), *base, *schema, *clients); err != nil {
		log.SetFlags(0)
		log.Fatalf("setup: %v", err)
	}
}

func setup(ctx context.Context, base, schema string, clients int) error {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	id := pgx.Identifier{schema}.Sanitize()
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+id+` CASCADE`); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+id); err != nil {
		return err
	}
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	c, err := fenced.Open(ctx, u.String(), fenced.Config{})
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Migrate(ctx); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `SET search_path = `+id+`; `+drivertest.BenchBizDDL); err != nil {
		return err
	}
	for w := range clients {
		for _, op := range []string{"Renew", "LeaseTx"} {
			l, err := c.AcquireLease(ctx, drivertest.BenchName(op, w), drivertest.BenchOwner, drivertest.BenchTTL)
			if err != nil {
				return err
			}
			if l.Fence != 1 {
				return fmt.Errorf("lease %s has fence %d; the scripts assume 1", l.Name, l.Fence)
			}
		}
		k := drivertest.BenchName("LeaseTx", w)
		if _, err := conn.Exec(ctx, `INSERT INTO fenced_bench_biz (k, v) VALUES ($1, 0)`, k); err != nil {
			return err
		}
	}
	// A fresh schema has no statistics; the Go benchmarks' fresh schemas
	// have none either, so leave it that way rather than ANALYZE.
	fmt.Fprintf(os.Stderr, "setup: schema %s ready for %d clients\n", schema, clients)
	return nil
}
