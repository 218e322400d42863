package sqlitedriver_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/sqlitedriver"
)

// TestOpenPathCannotCarrySettings: Open takes a file path, not a URL. A path
// holding "?", "#" or "%" (legal file name characters) must open exactly that file with
// the driver's own settings. Pasted into the DSN as it was, the part after
// "?" became connection parameters read before the driver's: _txlock=deferred
// won over immediate (a LeaseTx no longer held the write lock, so a takeover
// did not wait for it), synchronous(OFF) ran after synchronous(FULL) (a
// grant lost in a power cut is granted twice), and busy_timeout was lost
// (writers of other processes failed "database is locked" instead of waiting).
func TestOpenPathCannotCarrySettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "x%41#.db?_txlock=deferred&_pragma=synchronous(OFF)&_pragma=busy_timeout(0)&x=")
	d := openJobs(t, path)
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the file named by the path was not created: %v", err)
	}

	var sync, busy int
	if err := d.DB().QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
		t.Fatal(err)
	}
	if err := d.DB().QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil {
		t.Fatal(err)
	}
	if sync != 2 || busy != 30000 {
		t.Errorf("synchronous = %d, busy_timeout = %d; want 2 (FULL) and 30000", sync, busy)
	}

	l, err := d.AcquireLease(ctx, driver.AcquireLeaseParams{Name: "a", Owner: "A", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ref := driver.LeaseRef{Name: l.Name, Owner: l.Owner, Fence: l.Fence}
	err = d.LeaseTx(ctx, ref, func(tx driver.Tx) error {
		var file string
		if err := tx.QueryRow(ctx, `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&file); err != nil {
			return err
		}
		if file != path {
			t.Errorf("opened %q, want %q", file, path)
		}
		// Another process on the same file: it must wait for the lock.
		o, err := sqlitedriver.Open(ctx, path)
		if err != nil {
			return err
		}
		defer o.Close()
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if _, err := o.AcquireLease(short, driver.AcquireLeaseParams{Name: "b", Owner: "B", TTL: time.Minute}); err == nil {
			t.Errorf("another process wrote while the fenced transaction was open")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
