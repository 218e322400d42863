package fenced_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/sqlitedriver"
)

// sqliteClient opens a fenced client on a single-connection SQLite driver,
// so that a per-connection PRAGMA applies to every statement.
func sqliteClient(t *testing.T, ctx context.Context, path string) (*fenced.Client, *sqlitedriver.Driver) {
	t.Helper()
	d, err := sqlitedriver.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	d.DB().SetMaxOpenConns(1)
	d.DB().SetMaxIdleConns(1)
	c := fenced.New(d, fenced.Config{})
	t.Cleanup(func() { d.Close() })
	return c, d
}

// A full disk (simulated with PRAGMA max_page_count at the file's current
// size) makes a write fail with SQLite's "database or disk is full", not a
// fencing error, and writes nothing: the lease is not half-written, no job
// of a batch is enqueued, and once there is room again the same calls work.
func TestSQLiteFullDisk(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, d := sqliteClient(t, ctx, filepath.Join(t.TempDir(), "full.db"))
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	held, err := c.AcquireLease(ctx, "before", "A", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var pages int
	if err := d.DB().QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := d.DB().ExecContext(ctx, `PRAGMA max_page_count = `+itoa(pages)); err != nil {
		t.Fatal(err)
	}

	wantFull := func(t *testing.T, err error, what string) {
		t.Helper()
		switch {
		case err == nil:
			t.Fatalf("%s: succeeded on a full database", what)
		case errors.Is(err, fenced.ErrStale), errors.Is(err, fenced.ErrHeld), errors.Is(err, fenced.ErrNotFound),
			errors.Is(err, fenced.ErrInvalid):
			t.Fatalf("%s: a full disk reported as a fencing/validation error: %v", what, err)
		case !strings.Contains(strings.ToLower(err.Error()), "full"):
			t.Fatalf("%s: error does not say the database is full: %v", what, err)
		}
		t.Logf("%s: %v", what, err)
	}

	// Fill the file: new leases with long names until one does not fit.
	var lastErr error
	granted := map[string]bool{}
	for i := 0; i < 10000 && lastErr == nil; i++ {
		name := strings.Repeat("n", 190) + itoa(i)
		if _, lastErr = c.AcquireLease(ctx, name, "A", time.Minute); lastErr == nil {
			granted[name] = true
		} else if got, err := c.GetLease(ctx, name); !errors.Is(err, fenced.ErrNotFound) {
			t.Fatalf("the refused lease %s was half-written: %+v, %v", name, got, err)
		}
	}
	wantFull(t, lastErr, "Acquire")

	// A batch that does not fit is refused whole.
	batch := make([]fenced.EnqueueParams, 200)
	for i := range batch {
		batch[i] = fenced.EnqueueParams{Kind: "full", Args: map[string]string{"pad": strings.Repeat("x", 500)}}
	}
	_, err = c.EnqueueMany(ctx, nil, batch)
	wantFull(t, err, "EnqueueMany")
	if jobs, err := c.ListJobs(ctx, fenced.JobFilter{Kind: "full"}); err != nil || len(jobs) != 0 {
		t.Fatalf("partial batch: %d jobs visible (%v)", len(jobs), err)
	}
	_, err = c.WriteResource(ctx, "full", make([]byte, 64<<10), 1, fenced.WriteOptions{})
	wantFull(t, err, "WriteResource")
	if _, err := c.ReadResource(ctx, "full"); !errors.Is(err, fenced.ErrNotFound) {
		t.Fatalf("the refused resource write is visible: %v", err)
	}

	// What was there is intact, and reads work on a full disk.
	got, err := c.GetLease(ctx, "before")
	if err != nil || got.Fence != held.Fence || got.Owner != "A" || !got.Held {
		t.Fatalf("existing lease after the full disk: %+v, %v", got, err)
	}
	leases, err := c.ListLeases(ctx)
	if err != nil || len(leases) != len(granted)+1 {
		t.Fatalf("List on a full disk: %d leases (want %d), %v", len(leases), len(granted)+1, err)
	}

	// Room again: the same calls succeed.
	if _, err := d.DB().ExecContext(ctx, `PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EnqueueMany(ctx, nil, batch); err != nil {
		t.Fatalf("enqueue once there is room: %v", err)
	}
	if _, err := c.RenewLease(ctx, *held, time.Minute); err != nil {
		t.Fatalf("renew once there is room: %v", err)
	}
}

// A read-only SQLite database file is reported clearly on a write. As root
// file permissions do not apply, so the read-only state is made with
// PRAGMA query_only on the (single) connection instead.
func TestSQLiteReadOnly(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "fenced.db")
	{
		c, err := fenced.Open(ctx, "sqlite:"+path, fenced.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AcquireLease(ctx, "existing", "A", time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	wantReadOnly := func(t *testing.T, err error, what string) {
		t.Helper()
		msg := strings.ToLower(fmtErr(err))
		switch {
		case err == nil:
			t.Fatalf("%s: a write to a read-only database succeeded", what)
		case errors.Is(err, fenced.ErrStale), errors.Is(err, fenced.ErrHeld), errors.Is(err, fenced.ErrNotFound),
			errors.Is(err, fenced.ErrInvalid):
			t.Fatalf("%s: read-only reported as a fencing/validation error: %v", what, err)
		case !strings.Contains(msg, "read-only") && !strings.Contains(msg, "readonly") &&
			!strings.Contains(msg, "permission") && !strings.Contains(msg, "unable to open"):
			t.Fatalf("%s: error does not say the database is read-only: %v", what, err)
		}
		t.Logf("%s: %v", what, err)
	}

	if os.Geteuid() == 0 {
		// Root writes through any file mode: simulate with query_only.
		c, d := sqliteClient(t, ctx, path)
		if _, err := d.DB().ExecContext(ctx, `PRAGMA query_only = ON`); err != nil {
			t.Fatal(err)
		}
		_, err := c.AcquireLease(ctx, "new", "A", time.Minute)
		wantReadOnly(t, err, "Acquire (query_only, running as root)")
		_, _, err = c.Enqueue(ctx, fenced.EnqueueParams{Kind: "ro"})
		wantReadOnly(t, err, "Enqueue (query_only)")
		if l, err := c.GetLease(ctx, "existing"); err != nil || l.Owner != "A" {
			t.Fatalf("read on a read-only database: %+v, %v", l, err)
		}
		if _, err := c.GetLease(ctx, "new"); !errors.Is(err, fenced.ErrNotFound) {
			t.Fatalf("the refused acquire is visible: %v", err)
		}
		return
	}

	// After a clean close there is no -wal or -shm; make sure, then take
	// write permission away from the file and its directory.
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755); os.Chmod(path, 0o644) })
	c, err := fenced.Open(ctx, "sqlite:"+path, fenced.Config{})
	if err != nil {
		// Refusing at open (WAL needs a writable directory) is clear too.
		wantReadOnly(t, err, "Open")
		return
	}
	defer c.Close()
	_, err = c.AcquireLease(ctx, "new", "A", time.Minute)
	wantReadOnly(t, err, "Acquire")
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func itoa(n int) string { return strconv.Itoa(n) }
