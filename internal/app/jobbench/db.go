package jobbench

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/mysqldriver"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/driver/sqlitedriver"
	"github.com/fenced/fenced/internal/lib/dburl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// benchDB is the benchmark's database: a migrated client, the driver it
// opened for it (its own statements — warming the pool, the cleanup — go
// through the driver's connections, not behind the Client), and the
// temporary directory of a fresh SQLite file if it made one.
type benchDB struct {
	c       *fenced.Client
	d       driver.Driver
	backend fenced.Dialect // DialectPostgres, DialectMySQL or DialectSQLite
	pool    int            // PostgreSQL or MySQL pool size; 0 on SQLite
	tmpDir  string
	stmts   *statementCounter // the PostgreSQL pool's statements; nil elsewhere
}

// openDB opens and migrates the database; an empty url makes a fresh SQLite
// file. On PostgreSQL and MySQL every pooled connection is opened first, so
// the run does not measure connecting.
func openDB(ctx context.Context, rawURL string, poolConns int) (*benchDB, error) {
	db := &benchDB{}
	if rawURL == "" {
		dir, err := os.MkdirTemp("", "fenced-bench-")
		if err != nil {
			return nil, err
		}
		db.tmpDir = dir
		rawURL = "sqlite:" + filepath.Join(dir, "bench.db")
	}
	if kind := dburl.Backend(rawURL); kind == fenced.DialectPostgres || kind == fenced.DialectMySQL {
		rawURL = withPoolSize(rawURL, poolConns)
	}
	var err error
	if db.d, err = db.open(ctx, rawURL); err != nil {
		db.close()
		return nil, err
	}
	db.c = fenced.New(db.d, fenced.Config{})
	db.backend = db.d.Dialect()
	if _, err := db.c.Migrate(ctx); err != nil {
		db.close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	switch d := db.d.(type) {
	case *pgdriver.Driver:
		db.pool = int(d.Pool().Config().MaxConns)
		err = warm(ctx, d.Pool())
	case *mysqldriver.Driver:
		db.pool = d.DB().Stats().MaxOpenConnections
		err = warmSQL(ctx, d.DB(), db.pool)
	}
	if err != nil {
		db.close()
		return nil, err
	}
	return db, nil
}

// open opens the driver; on PostgreSQL with a statement counter on its
// pool.
func (db *benchDB) open(ctx context.Context, rawURL string) (driver.Driver, error) {
	if dburl.Backend(rawURL) != fenced.DialectPostgres {
		return fenced.OpenDriver(ctx, rawURL)
	}
	cfg, err := pgdriver.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	db.stmts = &statementCounter{}
	cfg.ConnConfig.Tracer = db.stmts
	d, err := pgdriver.OpenConfig(ctx, cfg)
	if err != nil {
		return nil, err // a nil Driver, not a typed nil
	}
	return d, nil
}

// withPoolSize sets pool_max_conns to n unless the URL sets it or n is 0.
func withPoolSize(rawURL string, n int) string {
	u, err := url.Parse(rawURL)
	if err != nil || n <= 0 {
		return rawURL
	}
	q := u.Query()
	if q.Has("pool_max_conns") {
		return rawURL
	}
	q.Set("pool_max_conns", strconv.Itoa(n))
	// Encode writes a space as "+", which the PostgreSQL driver's parse
	// keeps as a plus (options=-c%20jit%3Doff would become "-c+jit=off");
	// a literal plus is already "%2B" there.
	u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
	return u.String()
}

// warm opens every connection of the pool.
func warm(ctx context.Context, pool *pgxpool.Pool) error {
	conns := make([]*pgxpool.Conn, 0, pool.Config().MaxConns)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range cap(conns) {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		conns = append(conns, c)
	}
	return nil
}

// warmSQL opens n connections of a database/sql pool and leaves them idle
// (the driver keeps as many idle as it may open).
func warmSQL(ctx context.Context, sdb *sql.DB, n int) error {
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := sdb.Conn(ctx)
		if err == nil {
			err = c.PingContext(ctx)
		}
		if err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		conns = append(conns, c)
	}
	return nil
}

func (db *benchDB) close() {
	if db.c != nil {
		db.c.Close()
	}
	if db.d != nil {
		db.d.Close()
	}
	if db.tmpDir != "" {
		os.RemoveAll(db.tmpDir)
	}
}

// checkQueue refuses a queue that holds unfinished jobs: the workers would
// run them, and the benchmark would count them.
func (db *benchDB) checkQueue(ctx context.Context, queue string) error {
	counts, err := db.c.CountJobs(ctx)
	if err != nil {
		return err
	}
	var n int64
	for _, c := range counts {
		if c.Queue == queue && !c.State.Finished() {
			n += c.Count
		}
	}
	if n > 0 {
		return fmt.Errorf("queue %q holds %d unfinished jobs; a benchmark needs a queue of its own (--queue)", queue, n)
	}
	return nil
}

// analyze has PostgreSQL gather the job table's statistics after the
// insert, as its autovacuum would soon after (a table's first ANALYZE
// comes after 50 rows and a tenth of the table changed, within a minute):
// the workers' statements are then planned for the table as it is. A
// table just truncated has no statistics, and its plans can be far off
// (measured: with 1,002 jobs, the end statement planned as a nested loop
// over a sequential scan, 54 ms a batch, where its index plan takes 3).
// The other backends plan without such statistics.
func (db *benchDB) analyze(ctx context.Context) error {
	d, ok := db.d.(*pgdriver.Driver)
	if !ok {
		return nil
	}
	if _, err := d.Pool().Exec(ctx, `ANALYZE fenced_jobs`); err != nil {
		return fmt.Errorf("analyze the job table: %w", err)
	}
	return nil
}

// The benchmark deletes its own jobs (its kind, in its queue) at the end.
// The library deletes finished jobs only by age, for all queues, so the
// statement is the benchmark's own; attempts go with their jobs (a foreign
// key's ON DELETE CASCADE, or a delete trigger).
const cleanupSQL = `DELETE FROM fenced_jobs WHERE queue = $1 AND kind = $2`

// cleanup deletes the benchmark's jobs of queue, whatever their state: the
// workers have stopped.
func (db *benchDB) cleanup(ctx context.Context, queue string) error {
	var err error
	switch d := db.d.(type) {
	case *pgdriver.Driver:
		err = pgCleanup(ctx, d.Pool(), queue)
	case *sqlitedriver.Driver:
		_, err = d.DB().ExecContext(ctx, `DELETE FROM fenced_jobs WHERE queue = ? AND kind = ?`, queue, Kind)
	case *mysqldriver.Driver:
		_, err = d.DB().ExecContext(ctx, `DELETE FROM fenced_jobs WHERE queue = ? AND kind = ?`, queue, Kind)
	default:
		err = fmt.Errorf("no cleanup for a %s database", db.backend)
	}
	if err != nil {
		return fmt.Errorf("delete the benchmark's jobs: %w", err)
	}
	return nil
}

// pgCleanupOthersSQL tells whether the table holds jobs other than the
// benchmark's.
const pgCleanupOthersSQL = `SELECT EXISTS (SELECT 1 FROM fenced_jobs WHERE queue <> $1 OR kind <> $2)`

// pgCleanup deletes the benchmark's jobs; when they are the only jobs in
// the table, it truncates it instead (after locking it and looking again,
// within a second's wait for the lock), which writes next to no WAL where
// a DELETE logs every row: the WAL a run reports around it is then the
// jobs' work, as for a queue that truncates its table between runs.
func pgCleanup(ctx context.Context, pool *pgxpool.Pool, queue string) error {
	var others bool
	if err := pool.QueryRow(ctx, pgCleanupOthersSQL, queue, Kind).Scan(&others); err != nil {
		return err
	}
	if !others {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '1s'`); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `LOCK TABLE fenced_jobs IN ACCESS EXCLUSIVE MODE`); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, pgCleanupOthersSQL, queue, Kind).Scan(&others); err != nil || others {
				return err
			}
			_, err := tx.Exec(ctx, `TRUNCATE fenced_jobs`)
			return err
		})
		if err == nil && !others {
			return nil
		}
	}
	_, err := pool.Exec(ctx, cleanupSQL, queue, Kind)
	return err
}
