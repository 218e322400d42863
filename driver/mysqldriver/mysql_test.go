package mysqldriver_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/mysqldriver"
	"github.com/fenced/fenced/internal/testdb"
	"github.com/go-sql-driver/mysql"
)

// The dialect's own quirks. Behaviour shared by every backend is in the
// conformance suite.

// setup makes a fresh migrated database and returns its URL and a client.
func setup(t *testing.T) (string, *fenced.Client) {
	t.Helper()
	url := testdb.MySQL(t)
	return url, open(t, url)
}

func open(t *testing.T, url string) *fenced.Client {
	t.Helper()
	c, err := fenced.Open(context.Background(), url, fenced.Config{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// frozen is a session setting that stops the database clock of every
// connection at one instant: SET timestamp fixes NOW() and UTC_TIMESTAMP().
const frozen = "1800000000.123456"

// TestAffectedRowsAreMatchedRows: MySQL reports changed rows unless the
// client sets CLIENT_FOUND_ROWS. With the clock frozen, a renewal writes
// the expiry the row already has, so it changes nothing; it must still
// count as done, even when the URL asks for changed rows.
func TestAffectedRowsAreMatchedRows(t *testing.T) {
	t.Parallel()
	url, _ := setup(t)
	stopped := withParam(t, withParam(t, url, "timestamp", frozen), "clientFoundRows", "false")
	c := open(t, stopped)

	a, err := c.Acquire(ctx(t), "job", "A", time.Minute)
	must(t, err, "acquire")
	for i := range 2 {
		r, err := c.Renew(ctx(t), *a, time.Minute)
		must(t, err, fmt.Sprintf("renew %d to the same expiry", i+1))
		if r.Fence != a.Fence || !r.ExpiresAt.Equal(a.ExpiresAt) {
			t.Fatalf("renew %d = %+v, want the acquired generation unchanged %+v", i+1, r, a)
		}
	}
	again, err := c.Acquire(ctx(t), "job", "A", time.Minute)
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
	must(t, c.ReportProgress(ctx(t), claimed[0].Ref(), p), "progress")
	must(t, c.ReportProgress(ctx(t), claimed[0].Ref(), p), "the same progress again")
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
	a, err := east.Acquire(ctx(t), "job", "A", 300*time.Millisecond)
	must(t, err, "acquire in +05:00")
	if d := a.DecidedAt.Sub(before); d < -time.Minute || d > time.Minute {
		t.Fatalf("decided at %s, %s from the host clock: not UTC", a.DecidedAt, d)
	}
	seen, err := west.Get(ctx(t), "job")
	must(t, err, "get in -07:00")
	if !seen.ExpiresAt.Equal(a.ExpiresAt) || !seen.Held {
		t.Fatalf("-07:00 sees %+v, +05:00 wrote %+v", seen, a)
	}
	_, err = west.Acquire(ctx(t), "job", "B", time.Minute)
	if !errors.Is(err, fenced.ErrHeld) {
		t.Fatalf("-07:00 took a held lease: %v", err)
	}
	for {
		l, err := west.Get(ctx(t), "job")
		must(t, err, "get")
		if !l.Held {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	b, err := west.Acquire(ctx(t), "job", "B", time.Minute)
	must(t, err, "takeover in -07:00 after expiry")
	_, err = east.Renew(ctx(t), *a, time.Minute)
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

func TestConcurrentMigrationsApplyOnce(t *testing.T) {
	t.Parallel()
	url := testdb.MySQL(t)
	var mu sync.Mutex
	applied := map[int]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			c, err := fenced.Open(ctx(t), url, fenced.Config{})
			if err != nil {
				t.Errorf("open: %v", err)
				return
			}
			defer c.Close()
			vs, err := c.Migrate(ctx(t))
			if err != nil {
				t.Errorf("migrate: %v", err)
				return
			}
			mu.Lock()
			for _, v := range vs {
				applied[v]++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(applied) != 2 || applied[1] != 1 || applied[2] != 1 {
		t.Fatalf("applied = %v, want versions 1 and 2 once each", applied)
	}
	if vs, err := open(t, url).Migrate(ctx(t)); err != nil || len(vs) != 0 {
		t.Fatalf("migrate again = %v, %v", vs, err)
	}
}

// TestFenceAdvanceMovesJobIDsOn: job ids after an advance are above every
// id before by the step, though AUTO_INCREMENT cannot be altered inside a
// transaction.
func TestFenceAdvanceMovesJobIDsOn(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	var last *fenced.Job
	for range 3 {
		j, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k"})
		must(t, err, "enqueue")
		last = j
	}
	_, err := c.AdvanceFences(ctx(t), 1000)
	must(t, err, "advance")
	next, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k"})
	must(t, err, "enqueue after")
	if next.ID <= last.ID+1000 {
		t.Fatalf("id after advance %d, want above %d", next.ID, last.ID+1000)
	}
	jobs, err := c.ListJobs(ctx(t), fenced.JobFilter{})
	must(t, err, "list")
	if len(jobs) != 4 {
		t.Fatalf("%d jobs, want 4: the placeholders must be gone", len(jobs))
	}
}

// TestNamesAreComparedByteForByte: neither case nor trailing spaces make
// two lease names or owners one (a _ci or PAD SPACE collation would).
func TestNamesAreComparedByteForByte(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	for _, name := range []string{"job", "JOB", "job ", "jöb"} {
		l, err := c.Acquire(ctx(t), name, "A", time.Minute)
		must(t, err, "acquire "+name)
		if l.Fence != 1 {
			t.Fatalf("%q got fence %d: it shares a row with another name", name, l.Fence)
		}
	}
	if _, err := c.Acquire(ctx(t), "job", "A ", time.Minute); !errors.Is(err, fenced.ErrHeld) {
		t.Fatalf("owner \"A \" acquired A's lease: %v", err)
	}
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	cfg, conns, err := mysqldriver.ParseURL("mysql://u:p%40ss@db.example:3307/app?timeout=5s&pool_max_conns=7" +
		"&clientFoundRows=false&parseTime=false&loc=Local&multiStatements=true&time_zone=%27%2B05%3A00%27")
	must(t, err, "parse")
	if cfg.User != "u" || cfg.Passwd != "p@ss" || cfg.Addr != "db.example:3307" || cfg.DBName != "app" || conns != 7 ||
		cfg.Timeout != 5*time.Second || cfg.Params["time_zone"] != "'+05:00'" {
		t.Fatalf("cfg = %+v, conns %d", cfg, conns)
	}
	if !cfg.ClientFoundRows || !cfg.ParseTime || cfg.Loc != time.UTC || cfg.MultiStatements || !cfg.InterpolateParams {
		t.Fatalf("the driver's settings were not enforced: %+v", cfg)
	}
	cfg, _, err = mysqldriver.ParseURL("mariadb://root@[::1]/test?interpolateParams=false")
	must(t, err, "parse")
	if cfg.Addr != "[::1]:3306" || cfg.InterpolateParams {
		t.Fatalf("cfg = %+v", cfg)
	}
	for _, bad := range []string{
		"mysql://u:hunter2@h:3306", "mysql://u:hunter2@h:3306/", "mysql://u:hunter2@h:x/db", "mysql:u:hunter2@h/db",
		"mysql://u:hunter2@h/db?pool_max_conns=0", "mysql://u:hunter2@h/db?parseTime=maybe", "mysql://u:hunter2@h/a/b",
		"postgres://u:hunter2@h/db",
	} {
		_, _, err := mysqldriver.ParseURL(bad)
		if !errors.Is(err, driver.ErrInvalid) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseURL(%q) err = %v, want invalid without the password", bad, err)
		}
	}
	for in, want := range map[string]string{"mysql://u@h:3306/db": "mysql", "MariaDB://u@h/db": "mysql"} {
		if kind, target, err := fenced.ParseDatabaseURL(in); err != nil || kind != want || target != in {
			t.Errorf("ParseDatabaseURL(%q) = %q, %q, %v", in, kind, target, err)
		}
	}
	for _, bad := range []string{"mysql:u:hunter2@h/db", "mysql:hunter2"} {
		if _, _, err := fenced.ParseDatabaseURL(bad); !errors.Is(err, fenced.ErrInvalid) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseDatabaseURL(%q) err = %v", bad, err)
		}
	}
	_, err = fenced.Open(ctx(t), "mysql://u:hunter2@h:x/db", fenced.Config{})
	if !errors.Is(err, fenced.ErrInvalid) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Open err = %v", err)
	}
}

// TestHeartbeatReportsEachJob: one statement extends a worker's jobs; the
// read-back must tell the extended ones from a job still running under the
// caller's fence whose lease already expired, and from a forged fence.
func TestHeartbeatReportsEachJob(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	for range 3 {
		_, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k"})
		must(t, err, "enqueue")
	}
	live, err := c.ClaimJobs(ctx(t), fenced.DefaultQueue, "A", 2, time.Minute)
	must(t, err, "claim")
	late, err := c.ClaimJobs(ctx(t), fenced.DefaultQueue, "A", 1, 30*time.Millisecond)
	must(t, err, "claim")
	for {
		j, _, err := c.Driver().JobGet(ctx(t), late[0].ID)
		must(t, err, "get")
		if j.State == fenced.JobRunning && !j.LeaseExpiresAt.After(j.Now) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	forged := live[1].Ref()
	forged.Fence++
	hb, err := c.HeartbeatJobs(ctx(t), []fenced.JobRef{late[0].Ref(), live[0].Ref(), forged}, time.Minute)
	must(t, err, "heartbeat")
	if len(hb.Extended) != 1 || hb.Extended[0] != live[0].ID || len(hb.Lost) != 2 ||
		!hb.ExpiresAt.After(*live[0].LeaseExpiresAt) {
		t.Fatalf("heartbeat = %+v, want only job %d extended", hb, live[0].ID)
	}
	if j, _, _ := c.GetJob(ctx(t), live[1].ID); !j.LeaseExpiresAt.Equal(*live[1].LeaseExpiresAt) {
		t.Fatalf("the forged fence extended job %d", live[1].ID)
	}
}

// TestHeartbeatSkipsARowHeldByItsJobTx: a job whose row an open JobTx of
// its own attempt holds is reported Busy at once, not waited for, and the
// other jobs of the heartbeat are extended.
func TestHeartbeatSkipsARowHeldByItsJobTx(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	for range 2 {
		_, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k"})
		must(t, err, "enqueue")
	}
	jobs, err := c.ClaimJobs(ctx(t), fenced.DefaultQueue, "A", 2, time.Minute)
	must(t, err, "claim")
	held, release := make(chan struct{}), make(chan struct{})
	txDone := make(chan error, 1)
	go func() {
		txDone <- c.JobTx(ctx(t), jobs[0].Ref(), func(fenced.Tx) error { close(held); <-release; return nil })
	}()
	<-held
	start := time.Now()
	hb, err := c.HeartbeatJobs(ctx(t), []fenced.JobRef{jobs[1].Ref(), jobs[0].Ref()}, time.Minute)
	close(release)
	must(t, err, "heartbeat")
	must(t, <-txDone, "job tx")
	if len(hb.Busy) != 1 || hb.Busy[0] != jobs[0].ID || len(hb.Extended) != 1 || hb.Extended[0] != jobs[1].ID || len(hb.Lost) != 0 {
		t.Fatalf("heartbeat = %+v, want job %d busy and %d extended", hb, jobs[0].ID, jobs[1].ID)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("the heartbeat waited %s for the transaction", waited)
	}
}

// TestRetentionSkipsAJobBeingRetried: retention never deletes a job that a
// concurrent transaction is taking out of its finished state.
func TestRetentionSkipsAJobBeingRetried(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	j, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k", MaxAttempts: 1})
	must(t, err, "enqueue")
	claimed, err := c.ClaimJobs(ctx(t), fenced.DefaultQueue, "A", 1, time.Minute)
	must(t, err, "claim")
	must(t, c.FailJob(ctx(t), claimed[0].Ref(), "x", 0, false), "fail")
	tx, err := c.Driver().(*mysqldriver.Driver).DB().BeginTx(ctx(t), nil) // a retry in progress holds the row
	must(t, err, "begin")
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx(t), `UPDATE fenced_jobs SET state = 'queued', finished_at = NULL WHERE id = ?`, j.ID)
	must(t, err, "retry in a transaction")
	n, err := c.DeleteFinishedJobs(ctx(t), nil, 0, 100)
	if err != nil || n != 0 {
		t.Fatalf("deleted %d (%v) while the job was being retried", n, err)
	}
	must(t, tx.Commit(), "commit")
	if got, _, err := c.GetJob(ctx(t), j.ID); err != nil || got.State != fenced.JobQueued {
		t.Fatalf("after the retry: %+v %v", got, err)
	}
}

// TestConcurrentBatchEnqueuesGetTheirOwnJobs: batches inserted at once from
// several clients (each run of jobs without a key goes in one multiple-row
// INSERT when the server hands out consecutive ids) come back as the jobs
// each caller asked for, in its order.
func TestConcurrentBatchEnqueuesGetTheirOwnJobs(t *testing.T) {
	t.Parallel()
	url, _ := setup(t)
	var wg sync.WaitGroup
	for g := range 4 {
		c := open(t, url)
		wg.Go(func() {
			for round := range 3 {
				ps := make([]fenced.EnqueueParams, 300)
				for i := range ps {
					ps[i] = fenced.EnqueueParams{Kind: fmt.Sprintf("k%d", g), Args: map[string]int{"g": g, "i": i}}
					if i%50 == 7 {
						ps[i].IdempotencyKey = fmt.Sprintf("g%d-r%d-%d", g, round, i)
					}
				}
				res, err := c.EnqueueMany(ctx(t), nil, ps)
				if err != nil {
					t.Errorf("enqueue: %v", err)
					return
				}
				last := int64(0)
				for i, r := range res {
					var got struct{ G, I int }
					if err := json.Unmarshal(r.Job.Args, &got); err != nil || got.G != g || got.I != i {
						t.Errorf("job %d of caller %d has args %s", i, g, r.Job.Args)
						return
					}
					if r.Job.ID <= last {
						t.Errorf("ids do not ascend in input order: %d after %d", r.Job.ID, last)
						return
					}
					last = r.Job.ID
				}
			}
		})
	}
	wg.Wait()
}
