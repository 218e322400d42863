package fenced_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/testdb"
)

// A PostgreSQL connection killed in the middle of a fenced transaction
// (pg_terminate_backend, as a failover, an admin or an OOM kill would)
// must give the caller a clear connection error that is none of the
// fencing errors, commit nothing of the transaction, and leave the client
// usable: the pool replaces the dead connection.
func TestDatabaseGoneMidTransaction(t *testing.T) {
	t.Parallel()
	url := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := fenced.Open(ctx, url, fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, url, `CREATE TABLE gone_writes (id int PRIMARY KEY)`)

	// kill terminates the backend of tx from another connection and waits
	// until it is gone.
	kill := func(t *testing.T, tx fenced.Tx) {
		t.Helper()
		var pid int
		if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Fatalf("pid: %v", err)
		}
		testdb.Exec(t, url, `SELECT pg_terminate_backend($1::int, 10000)`, pid)
	}
	// write makes writes of every kind inside tx: a row of the caller's
	// own table and a batch of jobs.
	write := func(t *testing.T, tx fenced.Tx, id int) {
		t.Helper()
		if _, err := tx.Exec(ctx, `INSERT INTO gone_writes (id) VALUES ($1)`, id); err != nil {
			t.Fatalf("insert: %v", err)
		}
		batch := make([]fenced.EnqueueParams, 50)
		for i := range batch {
			batch[i] = fenced.EnqueueParams{Kind: "gone", Args: map[string]int{"i": i}}
		}
		if _, err := c.EnqueueMany(ctx, tx, batch); err != nil {
			t.Fatalf("enqueue in tx: %v", err)
		}
	}
	wantGone := func(t *testing.T, err error, what string) {
		t.Helper()
		switch {
		case err == nil:
			t.Fatalf("%s: no error although the connection was terminated", what)
		case errors.Is(err, fenced.ErrStale), errors.Is(err, fenced.ErrHeld), errors.Is(err, fenced.ErrNotFound),
			errors.Is(err, fenced.ErrInvalid):
			t.Fatalf("%s: connection loss reported as a fencing/validation error: %v", what, err)
		}
		msg := strings.ToLower(err.Error())
		if !strings.Contains(msg, "terminat") && !strings.Contains(msg, "conn") && !strings.Contains(msg, "57p01") {
			t.Fatalf("%s: error does not say the connection was lost: %v", what, err)
		}
		t.Logf("%s: %v", what, err)
	}
	wantNothingCommitted := func(t *testing.T) {
		t.Helper()
		jobs, err := c.ListJobs(ctx, fenced.JobFilter{Kind: "gone"})
		if err != nil {
			t.Fatalf("list jobs after the loss (the pool did not recover?): %v", err)
		}
		if len(jobs) != 0 {
			t.Fatalf("partial state: %d jobs of the killed transaction are visible", len(jobs))
		}
		var n int
		if err := countRows(ctx, c, &n); err != nil {
			t.Fatalf("count: %v", err)
		}
		if n != 0 {
			t.Fatalf("partial state: %d rows of the killed transaction are visible", n)
		}
	}

	l, err := c.AcquireLease(ctx, "gone", "A", time.Minute)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("LeaseTxCommitAfterKill", func(t *testing.T) {
		// fn returns nil: the commit is what meets the dead connection.
		err := c.LeaseTx(ctx, *l, func(tx fenced.Tx) error {
			write(t, tx, 1)
			kill(t, tx)
			return nil
		})
		wantGone(t, err, "LeaseTx commit")
		wantNothingCommitted(t)
	})

	t.Run("LeaseTxStatementAfterKill", func(t *testing.T) {
		// The next statement in fn meets the dead connection; fn returns
		// its error.
		var stmtErr error
		err := c.LeaseTx(ctx, *l, func(tx fenced.Tx) error {
			write(t, tx, 2)
			kill(t, tx)
			_, stmtErr = tx.Exec(ctx, `INSERT INTO gone_writes (id) VALUES (3)`)
			return stmtErr
		})
		wantGone(t, stmtErr, "statement in the killed transaction")
		wantGone(t, err, "LeaseTx")
		wantNothingCommitted(t)
	})

	t.Run("JobTxCommitAfterKill", func(t *testing.T) {
		if _, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "gone-work", Queue: "gone"}); err != nil {
			t.Fatal(err)
		}
		claimed, err := c.ClaimJobs(ctx, "gone", "W", 1, time.Minute)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim: %v, %d jobs", err, len(claimed))
		}
		job := claimed[0]
		err = c.JobTx(ctx, job.Ref(), func(tx fenced.Tx) error {
			write(t, tx, 4)
			if err := c.CompleteJobTx(ctx, tx, job.Ref(), map[string]bool{"done": true}); err != nil {
				t.Fatalf("complete in tx: %v", err)
			}
			kill(t, tx)
			return nil
		})
		wantGone(t, err, "JobTx commit")
		wantNothingCommitted(t)
		got, _, err := c.GetJob(ctx, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != fenced.JobRunning || got.Fence != job.Fence || got.Output != nil {
			t.Fatalf("partial state: the completion of the killed transaction is visible: %+v", got)
		}
	})

	// The client carries on: the pool replaced the dead connections.
	if err := c.LeaseTx(ctx, *l, func(tx fenced.Tx) error { write(t, tx, 5); return nil }); err != nil {
		t.Fatalf("LeaseTx after the losses: %v", err)
	}
	if l2, err := c.RenewLease(ctx, *l, time.Minute); err != nil || l2.Fence != l.Fence {
		t.Fatalf("renew after the losses: %v", err)
	}
	var n int
	if err := countRows(ctx, c, &n); err != nil || n != 1 {
		t.Fatalf("after a good transaction: %d rows, %v", n, err)
	}
}

// countRows counts gone_writes through the client's own pool (a LeaseTx on
// a lease of its own), so it also shows that the pool recovered.
func countRows(ctx context.Context, c *fenced.Client, n *int) error {
	l, err := c.AcquireLease(ctx, "gone-count", "counter", time.Minute)
	if err != nil {
		return err
	}
	defer c.ReleaseLease(ctx, *l)
	return c.LeaseTx(ctx, *l, func(tx fenced.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM gone_writes`).Scan(n)
	})
}
