package jobbench

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/driver/sqlitedriver"
	"github.com/jackc/pgx/v5/pgxpool"
)

// benchDB is the benchmark's database: a migrated client, and the temporary
// directory of a fresh SQLite file if it made one.
type benchDB struct {
	c       *fenced.Client
	backend string // "postgres" or "sqlite"
	pool    int    // PostgreSQL pool size; 0 on SQLite
	tmpDir  string
}

// openDB opens and migrates the database; an empty url makes a fresh SQLite
// file. On PostgreSQL every pooled connection is opened first, so the run
// does not measure connecting.
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
	kind, _, err := fenced.ParseDatabaseURL(rawURL)
	if err != nil {
		db.close()
		return nil, err
	}
	if kind == "postgres" {
		rawURL = withPoolSize(rawURL, poolConns)
	}
	if db.c, err = fenced.Open(ctx, rawURL, fenced.Config{}); err != nil {
		db.close()
		return nil, err
	}
	db.backend = db.c.Driver().Dialect()
	if _, err := db.c.Migrate(ctx); err != nil {
		db.close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if d, ok := db.c.Driver().(*pgdriver.Driver); ok {
		if err := warm(ctx, d.Pool()); err != nil {
			db.close()
			return nil, err
		}
		db.pool = int(d.Pool().Config().MaxConns)
	}
	return db, nil
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
	u.RawQuery = q.Encode()
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

func (db *benchDB) close() {
	if db.c != nil {
		db.c.Close()
	}
	if db.tmpDir != "" {
		os.RemoveAll(db.tmpDir)
	}
}

// checkQueue refuses a queue that holds unfinished jobs: the workers would
// run them, and the benchmark would count them.
func (db *benchDB) checkQueue(ctx context.Context, queue string) error {
	counts, err := db.c.JobCounts(ctx)
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

// The benchmark deletes its own jobs (its kind, in its queue) at the end.
// The library deletes finished jobs only by age, for all queues, so the
// statement is the benchmark's own; attempts go with their jobs (ON DELETE
// CASCADE).
const cleanupSQL = `DELETE FROM fenced_jobs WHERE queue = $1 AND kind = $2`

// cleanup deletes the benchmark's jobs of queue, whatever their state: the
// workers have stopped.
func (db *benchDB) cleanup(ctx context.Context, queue string) error {
	var err error
	switch d := db.c.Driver().(type) {
	case *pgdriver.Driver:
		_, err = d.Pool().Exec(ctx, cleanupSQL, queue, Kind)
	case *sqlitedriver.Driver:
		_, err = d.DB().ExecContext(ctx, `DELETE FROM fenced_jobs WHERE queue = ? AND kind = ?`, queue, Kind)
	}
	if err != nil {
		return fmt.Errorf("delete the benchmark's jobs: %w", err)
	}
	return nil
}
