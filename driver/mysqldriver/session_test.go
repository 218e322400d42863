package mysqldriver_test

import (
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/mysqldriver"
	"github.com/go-sql-driver/mysql"
)

// TestAffectedRowsAreMatchedRows: MySQL reports changed rows unless the
// client sets CLIENT_FOUND_ROWS. With the clock frozen, a renewal writes
// the expiry the row already has, so it changes nothing; it must still
// count as done, even when the URL asks for changed rows.
func TestAffectedRowsAreMatchedRows(t *testing.T) {
	t.Parallel()
	url, _ := setup(t)
	stopped := withParam(t, withParam(t, url, "timestamp", frozen), "clientFoundRows", "false")
	c := open(t, stopped)

	a, err := c.AcquireLease(ctx(t), "job", "A", time.Minute)
	must(t, err, "acquire")
	for i := range 2 {
		r, err := c.RenewLease(ctx(t), *a, time.Minute)
		must(t, err, fmt.Sprintf("renew %d to the same expiry", i+1))
		if r.Fence != a.Fence || !r.ExpiresAt.Equal(a.ExpiresAt) {
			t.Fatalf("renew %d = %+v, want the acquired generation unchanged %+v", i+1, r, a)
		}
	}
	again, err := c.AcquireLease(ctx(t), "job", "A", time.Minute)
	must(t, err, "re-acquire to the same expiry")
	if again.Fence != a.Fence {
		t.Fatalf("re-acquire fence %d, want %d", again.Fence, a.Fence)
	}
	j, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k"})
	must(t, err, "enqueue")
	claimed, err := c.ClaimJobs(ctx(t), fenced.DefaultQueue, "A", 1, time.Minute)
	must(t, err, "claim")
	for i := range 2 {
		hb, err := c.HeartbeatJobs(ctx(t), []fenced.JobRef{claimed[0].Ref()}, time.Minute)
		must(t, err, "heartbeat")
		if len(hb.Extended) != 1 || len(hb.Lost) != 0 {
			t.Fatalf("heartbeat %d to the same expiry = %+v", i+1, hb)
		}
	}
	p := fenced.Progress{Stage: "same"}
	_, err = c.ReportProgress(ctx(t), claimed[0].Ref(), p)
	must(t, err, "progress")
	_, err = c.ReportProgress(ctx(t), claimed[0].Ref(), p)
	must(t, err, "the same progress again")
	must(t, c.CompleteJob(ctx(t), claimed[0].Ref(), nil), "complete")
	if got, _, _ := c.GetJob(ctx(t), j.ID); got.State != fenced.JobSucceeded {
		t.Fatalf("job = %+v", got)
	}

	// The difference the setting makes, on a connection without it.
	cfg, _, err := mysqldriver.ParseURL(stopped)
	must(t, err, "parse url")
	cfg.ClientFoundRows = false
	connector, err := mysql.NewConnector(cfg)
	must(t, err, "connector")
	raw := sql.OpenDB(connector)
	defer raw.Close()
	renew := `UPDATE fenced_leases SET expires_at = UTC_TIMESTAMP(6) + INTERVAL 60 SECOND WHERE name = 'job'`
	res, err := raw.ExecContext(ctx(t), renew)
	must(t, err, "raw renew")
	if n, _ := res.RowsAffected(); n != 0 {
		t.Fatalf("without clientFoundRows an unchanged row counts %d, want 0 (is the clock frozen?)", n)
	}
}

// TestSessionTimeZoneChangesNothing: clients whose sessions are in different
// time zones share one lease and see the same instants.
func TestSessionTimeZoneChangesNothing(t *testing.T) {
	t.Parallel()
	url, _ := setup(t)
	east := open(t, withParam(t, url, "time_zone", "'+05:00'"))
	west := open(t, withParam(t, url, "time_zone", "'-07:00'"))

	before := time.Now()
	a, err := east.AcquireLease(ctx(t), "job", "A", 300*time.Millisecond)
	must(t, err, "acquire in +05:00")
	if d := a.DecidedAt.Sub(before); d < -time.Minute || d > time.Minute {
		t.Fatalf("decided at %s, %s from the host clock: not UTC", a.DecidedAt, d)
	}
	seen, err := west.GetLease(ctx(t), "job")
	must(t, err, "get in -07:00")
	if !seen.ExpiresAt.Equal(a.ExpiresAt) || !seen.Held {
		t.Fatalf("-07:00 sees %+v, +05:00 wrote %+v", seen, a)
	}
	_, err = west.AcquireLease(ctx(t), "job", "B", time.Minute)
	if !errors.Is(err, fenced.ErrHeld) {
		t.Fatalf("-07:00 took a held lease: %v", err)
	}
	for {
		l, err := west.GetLease(ctx(t), "job")
		must(t, err, "get")
		if !l.Held {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	b, err := west.AcquireLease(ctx(t), "job", "B", time.Minute)
	must(t, err, "takeover in -07:00 after expiry")
	_, err = east.RenewLease(ctx(t), *a, time.Minute)
	if !errors.Is(err, fenced.ErrStale) {
		t.Fatalf("renew after takeover: %v", err)
	}
	// The stored value is UTC.
	var stored string
	openDB(t, url).QueryRowContext(ctx(t), `SELECT CAST(expires_at AS CHAR) FROM fenced_leases WHERE name = 'job'`).Scan(&stored)
	if want := b.ExpiresAt.UTC().Format("2006-01-02 15:04:05.000000"); stored != want {
		t.Fatalf("stored expiry %s, want UTC %s", stored, want)
	}
}

// TestCallersConnectionSettingsDoNotMatter: a caller's own transaction
// (WrapTx) may come from a pool that parses times in another location, or
// not at all; the jobs read through it are the same.
func TestCallersConnectionSettingsDoNotMatter(t *testing.T) {
	t.Parallel()
	url, c := setup(t)
	runAt := time.Date(2031, 2, 3, 4, 5, 6, 789000, time.UTC)
	for _, parse := range []bool{true, false} {
		cfg, _, err := mysqldriver.ParseURL(url)
		must(t, err, "parse url")
		cfg.ParseTime, cfg.Loc = parse, time.FixedZone("UTC+3", 3*3600)
		connector, err := mysql.NewConnector(cfg)
		must(t, err, "connector")
		db := sql.OpenDB(connector)
		defer db.Close()
		tx, err := db.BeginTx(ctx(t), nil)
		must(t, err, "begin")
		j, _, err := c.EnqueueTx(ctx(t), mysqldriver.WrapTx(tx), fenced.EnqueueParams{Kind: "k", RunAt: runAt})
		must(t, err, "enqueue in the caller's transaction")
		must(t, tx.Commit(), "commit")
		if !j.RunAt.Equal(runAt) || j.RunAt.Location() != time.UTC || time.Since(j.CreatedAt).Abs() > time.Minute {
			t.Fatalf("parseTime=%v: run_at %s created %s", parse, j.RunAt, j.CreatedAt)
		}
	}
}

// TestRepeatableReadSnapshotIsNotADiagnosis: the caller's REPEATABLE READ
// transaction took its snapshot while A's attempt was current; B has since
// claimed the job. A's completion inside that transaction must be refused
// and name B's attempt, not what the stale snapshot shows.
func TestRepeatableReadSnapshotIsNotADiagnosis(t *testing.T) {
	t.Parallel()
	url, c := setup(t)
	j, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k"})
	must(t, err, "enqueue")
	a, err := c.ClaimJobs(ctx(t), fenced.DefaultQueue, "A", 1, 30*time.Millisecond)
	must(t, err, "claim by A")

	d := c.Driver().(*mysqldriver.Driver)
	tx, err := d.DB().BeginTx(ctx(t), &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	must(t, err, "begin")
	defer tx.Rollback()
	var seen string
	must(t, tx.QueryRowContext(ctx(t), `SELECT owner FROM fenced_jobs WHERE id = ?`, j.ID).Scan(&seen), "snapshot read")

	for {
		_, err := c.RecoverJobs(ctx(t), nil, 10, fenced.Backoff{Base: time.Microsecond, Max: time.Microsecond})
		must(t, err, "recover")
		if got, _, _ := c.GetJob(ctx(t), j.ID); got.State != fenced.JobRunning {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	b, err := open(t, url).ClaimJobs(ctx(t), fenced.DefaultQueue, "B", 1, time.Minute)
	must(t, err, "claim by B")
	if len(b) != 1 {
		t.Fatalf("B claimed %d jobs", len(b))
	}

	var still string
	must(t, tx.QueryRowContext(ctx(t), `SELECT owner FROM fenced_jobs WHERE id = ?`, j.ID).Scan(&still), "snapshot read again")
	if still != "A" {
		t.Fatalf("the snapshot shows owner %q; this test needs it to still show A", still)
	}
	err = c.CompleteJobTx(ctx(t), mysqldriver.WrapTx(tx), a[0].Ref(), nil)
	var se *fenced.StaleError
	if !errors.As(err, &se) || se.CurrentFence != b[0].Fence || se.CurrentOwner != "B" || se.Reason != fenced.ReasonSuperseded {
		t.Fatalf("A's completion in a stale snapshot = %v, want superseded by B's fence %d", err, b[0].Fence)
	}
}

// TestNoLostUpdates: the anomaly is real on this server (a read-then-write
// in two REPEATABLE READ transactions loses one increment), and the
// driver's writes, all current reads, lose none, in either isolation level.
func TestNoLostUpdates(t *testing.T) {
	t.Parallel()
	url, _ := setup(t)
	db := openDB(t, url)
	_, err := db.ExecContext(ctx(t), `CREATE TABLE counter (k INT PRIMARY KEY, v INT NOT NULL)`)
	must(t, err, "create")
	_, err = db.ExecContext(ctx(t), `INSERT INTO counter VALUES (1, 0)`)
	must(t, err, "insert")
	var txs [2]*sql.Tx
	var reads [2]int
	for i := range txs {
		txs[i], err = db.BeginTx(ctx(t), &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
		must(t, err, "begin")
		must(t, txs[i].QueryRowContext(ctx(t), `SELECT v FROM counter WHERE k = 1`).Scan(&reads[i]), "read")
	}
	for i, tx := range txs {
		_, err := tx.ExecContext(ctx(t), `UPDATE counter SET v = ? WHERE k = 1`, reads[i]+1)
		must(t, err, "write")
		must(t, tx.Commit(), "commit")
	}
	var v int
	must(t, db.QueryRowContext(ctx(t), `SELECT v FROM counter WHERE k = 1`).Scan(&v), "read")
	if v != 1 {
		t.Fatalf("two snapshot read-then-writes left %d; the anomaly did not happen", v)
	}

	for _, level := range []string{"", "'REPEATABLE-READ'"} {
		u := url
		if level != "" {
			u = withParam(t, url, isolationVariable(t), level)
		}
		c := open(t, u)
		key := "k" + level
		var wg sync.WaitGroup
		versions := make(chan int64, 200)
		for range 8 {
			wg.Go(func() {
				for range 25 {
					w, err := c.WriteResource(ctx(t), key, []byte("v"), 1, fenced.WriteOptions{})
					if err != nil {
						t.Errorf("write: %v", err)
						return
					}
					versions <- w.Version
				}
			})
		}
		wg.Wait()
		close(versions)
		seen := map[int64]bool{}
		for v := range versions {
			if seen[v] {
				t.Fatalf("isolation %s: version %d granted twice", level, v)
			}
			seen[v] = true
		}
		r, err := c.ReadResource(ctx(t), key)
		must(t, err, "read")
		if len(seen) != 200 || r.Version != 200 {
			t.Fatalf("isolation %s: %d versions, final %d, want 200", level, len(seen), r.Version)
		}
	}
}

// TestSessionIsolation: READ COMMITTED unless the URL sets the level.
func TestSessionIsolation(t *testing.T) {
	t.Parallel()
	url, _ := setup(t)
	for want, u := range map[string]string{
		"READ-COMMITTED":  url,
		"REPEATABLE-READ": withParam(t, url, isolationVariable(t), "'REPEATABLE-READ'"),
	} {
		d := open(t, u).Driver().(*mysqldriver.Driver)
		var got string
		must(t, d.DB().QueryRowContext(ctx(t), `SELECT @@`+isolationVariable(t)).Scan(&got), "read isolation")
		if got != want {
			t.Fatalf("session isolation %s, want %s", got, want)
		}
	}
}

// TestAutocommitOffInTheURLChangesNothing: a URL may set any session
// variable, autocommit=0 or completion_type=CHAIN (every commit opens the
// next transaction) too. A write the driver runs as one statement outside
// a transaction (a renewal, a resource write) must still be committed when
// it is reported done, not left in a transaction that commits or rolls
// back whenever the pooled connection is next used or closed.
func TestAutocommitOffInTheURLChangesNothing(t *testing.T) {
	t.Parallel()
	for name, value := range map[string]string{"autocommit": "0", "completion_type": "1"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testAutocommit(t, name, value)
		})
	}
}

func testAutocommit(t *testing.T, name, value string) {
	url, other := setup(t)
	c := open(t, withParam(t, url, name, value))

	a, err := c.AcquireLease(ctx(t), "job", "A", time.Minute)
	must(t, err, "acquire")
	r, err := c.RenewLease(ctx(t), *a, 2*time.Minute)
	must(t, err, "renew")
	seen, err := other.GetLease(ctx(t), "job")
	must(t, err, "get")
	if !seen.ExpiresAt.Equal(r.ExpiresAt) {
		t.Fatalf("renewal reported done to %s, but other sessions see the lease expire at %s", r.ExpiresAt, seen.ExpiresAt)
	}
	w, err := c.WriteResource(ctx(t), "key", []byte("v"), a.Fence, fenced.WriteOptions{})
	must(t, err, "write resource")
	if got, err := other.ReadResource(ctx(t), "key"); err != nil || got.Version != w.Version {
		t.Fatalf("resource write reported version %d, other sessions read %+v, %v", w.Version, got, err)
	}
}
