package chaos

import (
	"context"
	"errors"
	"fmt"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// postgresBackend runs in a schema of its own (search_path), names every
// worker's connections by application_name, and kills them with
// pg_terminate_backend.
type postgresBackend struct{}

var postgresDialect = &dialect{
	name: "postgres",
	id:   "bigserial PRIMARY KEY", text: "text", bigint: "bigint",
	at:        "timestamptz NOT NULL DEFAULT clock_timestamp()",
	forUpdate: " FOR UPDATE",
	keyedAt:   "(extract(epoch FROM l.at) * 1000000)::bigint", clockedAt: true,
	numbered:   true,
	disconnect: faultConnKill,
}

func (postgresBackend) dialect() *dialect { return postgresDialect }

func (b postgresBackend) isolate(ctx context.Context, base, id string) (string, string, error) {
	schema := "fenced_chaos_" + id
	c, err := b.open(ctx, base, fenced.Config{})
	if err != nil {
		return "", "", err
	}
	_, err = c.db.Exec(ctx, `CREATE SCHEMA `+schema)
	c.Close()
	if err != nil {
		return "", "", fmt.Errorf("create schema: %w", err)
	}
	url, err := withParams(base, map[string]string{"search_path": schema, "application_name": "fcc-" + id})
	return schema, url, err
}

func (b postgresBackend) drop(ctx context.Context, base, schema string) error {
	c, err := b.open(ctx, base, fenced.Config{})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.db.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`)
	return err
}

// workerURL names the worker's connections, for disconnect to find.
func (postgresBackend) workerURL(url, id, proc string) (string, error) {
	return withParams(url, map[string]string{"application_name": "fcw-" + id + "-" + proc})
}

func (postgresBackend) open(ctx context.Context, url string, cfg fenced.Config) (*client, error) {
	d, err := pgdriver.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	return &client{Client: fenced.New(d, cfg), db: pgxQuerier{d.Pool()}, closeDriver: d.Close}, nil
}

// disconnect terminates one of the workers' database connections from
// the server side.
func (postgresBackend) disconnect(ctx context.Context, r *run, f fault) error {
	rows, err := r.c.db.Query(ctx, `SELECT pid, application_name FROM pg_stat_activity
WHERE application_name LIKE $1 ORDER BY pid`, "fcw-"+r.id+"-%")
	if err != nil {
		return err
	}
	var pids []int32
	var names []string
	for rows.Next() {
		var pid int32
		var name string
		if err := rows.Scan(&pid, &name); err != nil {
			rows.Close()
			return err
		}
		pids, names = append(pids, pid), append(names, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(pids) == 0 {
		return errors.New("no worker connection to kill")
	}
	i := f.pick % len(pids)
	var ok bool
	if err := r.c.db.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pids[i]).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("backend %d was gone", pids[i])
	}
	r.logf("nemesis: pg_terminate_backend(%d) of %s", pids[i], names[i])
	return nil
}

// pgxQuerier is a querier on a pgx pool.
type pgxQuerier struct{ p *pgxpool.Pool }

func (q pgxQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.p.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (q pgxQuerier) Query(ctx context.Context, query string, args ...any) (driver.Rows, error) {
	rows, err := q.p.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgxRows{rows}, nil
}

func (q pgxQuerier) QueryRow(ctx context.Context, query string, args ...any) driver.Row {
	return q.p.QueryRow(ctx, query, args...)
}

// pgxRows are pgx rows whose Close reports their error, as driver.Rows'
// does.
type pgxRows struct{ pgx.Rows }

func (r pgxRows) Close() error {
	r.Rows.Close()
	return r.Rows.Err()
}
