package pgdriver_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/test/testdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func openDriver(t *testing.T, url string) *pgdriver.Driver {
	t.Helper()
	d, err := pgdriver.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func migrated(t *testing.T, url string) *pgdriver.Driver {
	t.Helper()
	d := openDriver(t, url)
	if _, err := d.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d
}

// A listener stopped by its context must not hand a connection that still
// LISTENs back to the pool: every enqueue would then buffer a notification
// in that connection's memory for as long as it serves other queries.
func TestJobListenLeavesNoListenerInThePool(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Two connections: a pool of one is never listened on (the listener
	// would hold it for good).
	d := migrated(t, testdb.Postgres(t)+"&pool_max_conns=2")
	lctx, stop := context.WithCancel(ctx)
	woke := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- d.ListenJobs(lctx, func() {}, func(q string) {
			select {
			case woke <- q:
			default:
			}
		})
	}()
	// Wait until it listens: an enqueue from another connection wakes it.
	deadline := time.After(10 * time.Second)
	for listening := false; !listening; {
		conn, err := pgx.Connect(ctx, testdb.PostgresURL())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `SELECT pg_notify('fenced_jobs', 'q')`); err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)
		select {
		case <-woke:
			listening = true
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatal("listener never woke")
		}
	}
	stop()
	if err := <-done; err == nil {
		t.Fatal("ListenJobs returned nil")
	}
	// Every connection the pool can hand out, held at once.
	for range 2 {
		conn, err := d.Pool().Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Release()
		var chans []string
		if err := conn.QueryRow(ctx, `SELECT array(SELECT pg_listening_channels())`).Scan(&chans); err != nil {
			t.Fatal(err)
		}
		if len(chans) != 0 {
			t.Fatalf("a pooled connection still listens on %v after ListenJobs returned", chans)
		}
	}
}

// Migrate is safe to run concurrently whatever isolation the URL sets as the
// session default: a migrator that waited for the lock must see what the
// one before it committed.
func TestConcurrentMigrateUnderRepeatableReadDefault(t *testing.T) {
	t.Parallel()
	for round := range 3 {
		url := testdb.Postgres(t) + "&default_transaction_isolation=repeatable%20read"
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			d := openDriver(t, url)
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = d.Migrate(context.Background())
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d migrator %d: %v", round, i, err)
			}
		}
	}
}

// An end of a job inside the caller's REPEATABLE READ transaction must not
// diagnose from that transaction's snapshot: after a heartbeat extended the
// attempt (committed after the snapshot), the snapshot still shows the old,
// now passed, expiry. The attempt is current; reporting it stale makes the
// worker give up a job it holds. The caller must get either success or a
// serialization failure it can retry.
func TestJobEndInRepeatableReadTxIsNotFalselyStale(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := migrated(t, testdb.Postgres(t))
	if _, err := d.Enqueue(ctx, nil, []driver.EnqueueParams{{Kind: "k", Queue: "q", Args: []byte(`{}`), MaxAttempts: 3}}); err != nil {
		t.Fatal(err)
	}
	jobs, err := d.ClaimJobs(ctx, driver.ClaimJobsParams{Queue: "q", Owner: "A", Limit: 1, TTL: 500 * time.Millisecond})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v %v", jobs, err)
	}
	ref := fencedtype.JobRef{ID: jobs[0].ID, Fence: jobs[0].Fence}

	tx, err := d.Pool().BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM fenced_jobs`).Scan(&n); err != nil { // the snapshot
		t.Fatal(err)
	}
	hb, err := d.HeartbeatJobs(ctx, []fencedtype.JobRef{ref}, time.Minute)
	if err != nil || len(hb.Extended) != 1 {
		t.Fatalf("heartbeat: %+v %v", hb, err)
	}
	time.Sleep(time.Until(*jobs[0].LeaseExpiresAt) + 100*time.Millisecond)

	errs, _, err := d.EndJobs(ctx, pgdriver.WrapTx(tx), []fencedtype.JobEnd{{Ref: ref, Kind: fencedtype.EndComplete}})
	var pgErr *pgconn.PgError
	switch {
	case err != nil && errors.As(err, &pgErr) && pgErr.Code == "40001":
		// the caller retries its transaction
	case err != nil:
		t.Fatalf("end: %v", err)
	case errs[0] != nil:
		j, _, _ := d.GetJob(ctx, ref.ID)
		t.Fatalf("end of the current attempt reported %v; the job is %s under fence %d until %v",
			errs[0], j.State, j.Fence, fmt.Sprint(j.LeaseExpiresAt))
	}
}

// A guard in the caller's REPEATABLE READ transaction must not decide from
// that transaction's snapshot: after a renewal (committed after the
// snapshot) the snapshot still shows the old, now passed, expiry, and the
// current holder would be told its lease is stale.
func TestGuardInRepeatableReadTxIsNotFalselyStale(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := migrated(t, testdb.Postgres(t))
	serializable := func(err error) bool {
		var pgErr *pgconn.PgError
		return errors.As(err, &pgErr) && pgErr.Code == "40001"
	}

	t.Run("Lease", func(t *testing.T) {
		l, err := d.AcquireLease(ctx, driver.AcquireLeaseParams{Name: "n", Owner: "A", TTL: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ref := driver.LeaseRef{Name: "n", Owner: "A", Fence: l.Fence}
		tx, err := d.Pool().BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM fenced_leases`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if _, err := d.RenewLease(ctx, ref, time.Minute); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(l.ExpiresAt) + 100*time.Millisecond)
		if err := d.GuardLease(ctx, tx, ref); err != nil && !serializable(err) {
			t.Fatalf("guard of the current holder: %v", err)
		}
	})
	t.Run("Job", func(t *testing.T) {
		if _, err := d.Enqueue(ctx, nil, []driver.EnqueueParams{{Kind: "k", Queue: "q", Args: []byte(`{}`), MaxAttempts: 3}}); err != nil {
			t.Fatal(err)
		}
		jobs, err := d.ClaimJobs(ctx, driver.ClaimJobsParams{Queue: "q", Owner: "A", Limit: 1, TTL: 500 * time.Millisecond})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim: %v %v", jobs, err)
		}
		ref := fencedtype.JobRef{ID: jobs[0].ID, Fence: jobs[0].Fence}
		tx, err := d.Pool().BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM fenced_jobs`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if hb, err := d.HeartbeatJobs(ctx, []fencedtype.JobRef{ref}, time.Minute); err != nil || len(hb.Extended) != 1 {
			t.Fatalf("heartbeat: %+v %v", hb, err)
		}
		time.Sleep(time.Until(*jobs[0].LeaseExpiresAt) + 100*time.Millisecond)
		if err := d.GuardJob(ctx, tx, ref); err != nil && !serializable(err) {
			t.Fatalf("guard of the current attempt: %v", err)
		}
	})
}

// The URL's default isolation must not change outcomes: under a REPEATABLE
// READ session default, contending acquirers got serialization failures
// instead of *HeldError, and contending claimers errors instead of jobs.
func TestRepeatableReadSessionDefaultChangesNoOutcome(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := migrated(t, testdb.Postgres(t)+"&default_transaction_isolation=repeatable%20read")
	for round := range 20 {
		name := fmt.Sprint("n", round)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = d.AcquireLease(ctx, driver.AcquireLeaseParams{Name: name, Owner: fmt.Sprint("o", i), TTL: time.Minute})
			}()
		}
		wg.Wait()
		for _, err := range errs {
			var held *fencedtype.HeldError
			if err != nil && !errors.As(err, &held) {
				t.Fatalf("acquire: %v", err)
			}
		}
	}
	params := make([]driver.EnqueueParams, 200)
	for i := range params {
		params[i] = driver.EnqueueParams{Kind: "k", Queue: "q", Args: []byte(`{}`), MaxAttempts: 3}
	}
	if _, err := d.Enqueue(ctx, nil, params); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				if _, err := d.ClaimJobs(ctx, driver.ClaimJobsParams{Queue: "q", Owner: fmt.Sprint("w", i), Limit: 2, TTL: time.Minute}); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
	}
}

// A fenced transaction whose function panics is rolled back, its row lock
// let go and its connection given back to the pool.
func TestLeaseTxPanicRollsBack(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := migrated(t, testdb.Postgres(t)+"&pool_max_conns=1")
	if _, err := d.Pool().Exec(ctx, `CREATE TABLE t (v int)`); err != nil {
		t.Fatal(err)
	}
	l, err := d.AcquireLease(ctx, driver.AcquireLeaseParams{Name: "n", Owner: "A", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ref := driver.LeaseRef{Name: "n", Owner: "A", Fence: l.Fence}
	func() {
		defer func() { _ = recover() }()
		_ = d.LeaseTx(ctx, ref, func(tx driver.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO t VALUES (1)`); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	var n int
	if err := d.Pool().QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows after a panicking fenced transaction: %d %v", n, err)
	}
	if _, err := d.ReleaseLease(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := d.AcquireLease(ctx, driver.AcquireLeaseParams{Name: "n", Owner: "B", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
}
