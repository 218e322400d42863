package drivertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

const bizDDL = `CREATE TABLE fenced_test_biz (k VARCHAR(100) PRIMARY KEY, v BIGINT NOT NULL)`

// bizRows reads the test's business table as k → v.
func (e *env) bizRows(t *testing.T, l fenced.Lease) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	// Read through a fresh lease so the read itself cannot be refused.
	r := e.acquire(t, "reader-"+l.Name, "reader", long)
	err := e.c.LeaseTx(ctx(t), *r, func(tx fenced.Tx) error {
		rows, err := tx.Query(ctx(t), `SELECT k, v FROM fenced_test_biz`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			var v int64
			if err := rows.Scan(&k, &v); err != nil {
				return err
			}
			out[k] = v
		}
		return rows.Err()
	})
	wantNoErr(t, err, "read business table")
	return out
}

func (e *env) insertBiz(tx fenced.Tx, k string, v int64) error {
	_, err := tx.Exec(context.Background(), e.b.bind(`INSERT INTO fenced_test_biz (k, v) VALUES ($1, $2)`), k, v)
	return err
}

func runLeaseTx(t *testing.T, b Backend) {
	setupBiz := func(t *testing.T) *env {
		e := setup(t, b)
		b.Exec(t, e.url, bizDDL)
		return e
	}
	t.Run("CommitsUnderCurrentFence", func(t *testing.T) {
		t.Parallel()
		e := setupBiz(t)
		a := e.acquire(t, "job", "A", long)
		err := e.c.LeaseTx(ctx(t), *a, func(tx fenced.Tx) error { return e.insertBiz(tx, "a", 1) })
		wantNoErr(t, err, "lease tx")
		if got := e.bizRows(t, *a); got["a"] != 1 {
			t.Fatalf("business rows = %v", got)
		}
	})
	t.Run("ErrorFromFnRollsBack", func(t *testing.T) {
		t.Parallel()
		e := setupBiz(t)
		a := e.acquire(t, "job", "A", long)
		boom := errors.New("boom")
		err := e.c.LeaseTx(ctx(t), *a, func(tx fenced.Tx) error {
			if err := e.insertBiz(tx, "a", 1); err != nil {
				return err
			}
			return boom
		})
		wantErrIs(t, err, boom)
		if got := e.bizRows(t, *a); len(got) != 0 {
			t.Fatalf("rolled-back write is visible: %v", got)
		}
	})
	t.Run("AfterTakeoverIsStaleAndWritesNothing", func(t *testing.T) {
		t.Parallel()
		e := setupBiz(t)
		a := e.acquire(t, "job", "A", 50*time.Millisecond)
		e.waitExpired(t, "job")
		e.acquire(t, "job", "B", long)
		called := false
		err := e.c.LeaseTx(ctx(t), *a, func(tx fenced.Tx) error {
			called = true
			return e.insertBiz(tx, "stale", 5)
		})
		wantStale(t, err, 1, 2, "B", fenced.ReasonSuperseded)
		if called {
			t.Fatal("fn ran under a stale fence")
		}
		if got := e.bizRows(t, *a); len(got) != 0 {
			t.Fatalf("stale write is visible: %v", got)
		}
	})
	t.Run("AfterExpiryIsStale", func(t *testing.T) {
		t.Parallel()
		e := setupBiz(t)
		a := e.acquire(t, "job", "A", 50*time.Millisecond)
		e.waitExpired(t, "job")
		err := e.c.LeaseTx(ctx(t), *a, func(tx fenced.Tx) error { return e.insertBiz(tx, "late", 5) })
		wantStale(t, err, 1, 1, "", fenced.ReasonExpired)
	})
	t.Run("TakeoverWaitsForOpenLeaseTx", func(t *testing.T) { t.Parallel(); takeoverWaits(t, setupBiz(t)) })
}

// takeoverWaits proves the READ COMMITTED window is closed: while A's fenced
// transaction is open, B's takeover (from another client, its own
// connections) blocks; it completes only after A commits; A's next fenced
// transaction is stale and writes nothing.
func takeoverWaits(t *testing.T, e *env) {
	ttl := 300 * time.Millisecond
	other := e.b.open(t, e.url, fenced.Config{})
	a := e.acquire(t, "job", "A", ttl)

	inTx, commit := make(chan struct{}), make(chan struct{})
	txDone := make(chan error, 1)
	go func() {
		txDone <- e.c.LeaseTx(ctx(t), *a, func(tx fenced.Tx) error {
			if err := e.insertBiz(tx, "a1", 1); err != nil {
				return err
			}
			close(inTx)
			<-commit
			return nil
		})
	}()
	select {
	case <-inTx:
	case err := <-txDone:
		t.Fatalf("lease tx ended early: %v", err)
	}
	e.waitExpired(t, "job") // A's lease is over by the database clock; its tx is still open

	type result struct {
		l   *fenced.Lease
		err error
	}
	took := make(chan result, 1)
	go func() {
		l, err := other.AcquireLease(ctx(t), "job", "B", long)
		took <- result{l, err}
	}()
	if e.b.WaitBlocked != nil {
		e.b.WaitBlocked(t, e.url)
	} else {
		time.Sleep(300 * time.Millisecond)
	}
	select {
	case r := <-took:
		t.Fatalf("takeover completed while the fenced transaction was open: %+v %v", r.l, r.err)
	default:
	}
	close(commit)
	wantNoErr(t, <-txDone, "fenced tx of A")
	r := <-took
	wantNoErr(t, r.err, "takeover by B")
	wantFence(t, r.l, 2)

	err := e.c.LeaseTx(ctx(t), *a, func(tx fenced.Tx) error { return e.insertBiz(tx, "a2", 2) })
	wantStale(t, err, 1, 2, "B", fenced.ReasonSuperseded)
	got := e.bizRows(t, *a)
	if len(got) != 1 || got["a1"] != 1 {
		t.Fatalf("business rows = %v, want only a1 (written while A was current)", got)
	}
}
