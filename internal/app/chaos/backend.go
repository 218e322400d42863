package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/internal/lib/dburl"
)

// A backend is what a chaos run does differently on each SQL database it
// runs on: where it keeps its tables apart from everything else, how it
// opens a client, what stands for a killed connection, and the dialect of
// its own statements. The workloads, the nemesis's pauses and kills, and
// the checkers are the same on every backend.
type backend interface {
	// dialect is the backend's SQL dialect.
	dialect() *dialect
	// isolate creates the run's own place on the database at base (a
	// schema, a database, a file) for run id, and returns its name and a
	// URL that works in it.
	isolate(ctx context.Context, base, id string) (name, url string, err error)
	// drop removes what isolate created.
	drop(ctx context.Context, base, name string) error
	// workerURL is the URL worker process proc of run id connects with.
	workerURL(url, id, proc string) (string, error)
	// open opens a client on url.
	open(ctx context.Context, url string, cfg fenced.Config) (*client, error)
	// disconnect injects the backend's connection fault
	// (dialect.disconnect) on one of the run's workers, chosen by f.pick.
	disconnect(ctx context.Context, r *run, f fault) error
}

// dialect is a backend's SQL: the column types of the workload's tables and
// the few phrases in which the suite's own statements differ. Those are
// written with ? placeholders (dialect.sql numbers them for PostgreSQL).
type dialect struct {
	name string // dburl's: postgres, mysql or sqlite
	// Column types: an increasing row id, short text, a 64-bit integer,
	// and the database clock at an insert; then what ends a CREATE TABLE.
	id, text, bigint, at, tableEnd string
	// forUpdate ends a read that row-locks what it reads ("" on SQLite,
	// whose write transactions hold the database's one write lock).
	forUpdate string
	// keyedAt is the keyed checker's order of the keyed ledger's rows
	// (aliased l), an integer: microseconds of the database clock, or on
	// SQLite, whose clock counts milliseconds, the row id (writers are
	// serialized, so ids follow the order in which they committed).
	keyedAt   string
	clockedAt bool // keyedAt is the clock, else a sequence
	// numbered: placeholders are $1, $2, … (PostgreSQL).
	numbered bool
	// disconnect is the fault that stands for a killed connection.
	disconnect faultKind
}

// sql is q, written with ? placeholders, in the dialect's placeholders.
func (d *dialect) sql(q string) string {
	if !d.numbered {
		return q
	}
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// backendOf is the backend of a database URL.
func backendOf(url string) (backend, error) {
	switch kind := dburl.Backend(url); kind {
	case "postgres":
		return postgresBackend{}, nil
	case "mysql":
		return mysqlBackend{}, nil
	case "sqlite":
		return sqliteBackend{}, nil
	case "":
		return nil, fmt.Errorf("chaos runs on PostgreSQL, MySQL or MariaDB, or SQLite; the URL names none: %w", fenced.ErrInvalid)
	default:
		return nil, fmt.Errorf("chaos runs on PostgreSQL, MySQL or MariaDB, or SQLite (its workloads write business rows in fenced SQL transactions), not on %s: %w", kind, fenced.ErrInvalid)
	}
}

// querier runs the suite's own statements (its tables, its checks, the
// sessions its nemesis kills) on the pool of the driver a client opened.
type querier interface {
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args ...any) (driver.Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) driver.Row
}

// sqlQuerier is a querier on a database/sql pool.
type sqlQuerier struct{ db *sql.DB }

func (q sqlQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q sqlQuerier) Query(ctx context.Context, query string, args ...any) (driver.Rows, error) {
	return q.db.QueryContext(ctx, query, args...)
}

func (q sqlQuerier) QueryRow(ctx context.Context, query string, args ...any) driver.Row {
	return q.db.QueryRowContext(ctx, query, args...)
}
