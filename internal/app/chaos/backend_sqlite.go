package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/sqlitedriver"
)

// sqliteBackend runs in a database file of its own, beside the file the URL
// names; every worker process opens that one file. SQLite has no server
// and so no connection to kill: a worker's connections are its own open
// file, and a kill of the process (SIGKILL mid-transaction included)
// is what ends them. What stands for the connection kill is a write-lock
// stall (faultStall): the coordinator takes the database's one write lock
// and holds it past the job TTL, as a backup or another program's long
// transaction would, so that every worker's writes wait on it, their
// heartbeats among them, and must then judge expiry after the wait.
type sqliteBackend struct{}

var sqliteDialect = &dialect{
	name: "sqlite",
	id:   "INTEGER PRIMARY KEY", text: "TEXT", bigint: "INTEGER",
	at:         "INTEGER NOT NULL DEFAULT (CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) * 1000)",
	keyedAt:    "l.id",
	disconnect: faultStall,
}

func (sqliteBackend) dialect() *dialect { return sqliteDialect }

func (sqliteBackend) isolate(ctx context.Context, base, id string) (string, string, error) {
	path, err := sqlitedriver.ParseURL(base)
	if err != nil {
		return "", "", err
	}
	if path, err = filepath.Abs(path); err != nil {
		return "", "", err
	}
	file := filepath.Join(filepath.Dir(path), "fenced_chaos_"+id+".db")
	if _, err := os.Stat(file); err == nil {
		return "", "", fmt.Errorf("%s exists already", file)
	}
	return file, "sqlite:" + file, nil
}

func (sqliteBackend) drop(_ context.Context, _, file string) error {
	var errs []error
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(file + suffix); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (sqliteBackend) workerURL(url, _, _ string) (string, error) { return url, nil }

func (sqliteBackend) open(ctx context.Context, url string, cfg fenced.Config) (*client, error) {
	path, err := sqlitedriver.ParseURL(url)
	if err != nil {
		return nil, err
	}
	d, err := sqlitedriver.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	return &client{Client: fenced.New(d, cfg), db: sqlQuerier{d.DB()}, closeDriver: d.Close}, nil
}

// stallTakeBound bounds the wait for the write lock a stall takes (a
// paused worker may hold it).
const stallTakeBound = 10 * time.Second

// disconnect stalls the database: it begins a write transaction (every
// transaction of the driver's pool begins IMMEDIATE, taking the write
// lock), holds it for f.length, and rolls it back.
func (sqliteBackend) disconnect(_ context.Context, r *run, f fault) error {
	d, ok := r.c.Driver().(*sqlitedriver.Driver)
	if !ok {
		return fmt.Errorf("the run's client is on %T, not SQLite", r.c.Driver())
	}
	// The transaction's context is its lifetime: the stall's length, and
	// the wait for the lock, whatever becomes of ctx.
	sctx, cancel := context.WithTimeout(context.Background(), stallTakeBound+f.length)
	took := time.Now()
	tx, err := d.DB().BeginTx(sctx, nil)
	if err == nil && time.Since(took) > stallTakeBound {
		tx.Rollback()
		err = fmt.Errorf("took the write lock only after %s", time.Since(took).Round(time.Millisecond))
	}
	if err != nil {
		cancel()
		return fmt.Errorf("take the write lock: %w", err)
	}
	r.logf("nemesis: holding the SQLite write lock for %s", f.length.Round(time.Millisecond))
	r.stalls.Add(1)
	go func() {
		defer r.stalls.Done()
		defer cancel()
		nap(sctx, f.length)
		tx.Rollback()
	}()
	return nil
}
