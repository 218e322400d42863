package etcddriver_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/etcddriver"
)

// LeaseTx on etcd commits the buffered puts iff the generation is held at
// the commit, and refuses SQL and fenced's own keys.
func TestLeaseTx(t *testing.T) {
	c, prefix := open(t)
	raw := rawClient(t)
	key := prefix[:len(prefix)-1] + "-user/out" // the user's own key, beside fenced's prefix
	value := func() string {
		resp, err := raw.Get(ctx(t), key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return ""
		}
		return string(resp.Kvs[0].Value)
	}
	a, err := c.AcquireLease(ctx(t), "job", "A", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	err = c.LeaseTx(ctx(t), *a, func(tx fenced.Tx) error {
		tx.(*etcddriver.Tx).Put(key, "A1")
		return nil
	})
	if err != nil || value() != "A1" {
		t.Fatalf("tx under the held generation: %v, value %q", err, value())
	}

	// A takeover while fn runs makes the commit stale: nothing is written.
	err = c.LeaseTx(ctx(t), *a, func(tx fenced.Tx) error {
		tx.(*etcddriver.Tx).Put(key, "A2")
		deadline := time.Now().Add(5 * time.Second)
		for {
			if _, err := c.AcquireLease(ctx(t), "job", "B", 5*time.Second); err == nil {
				return nil
			}
			if time.Now().After(deadline) {
				t.Error("B never took over")
				return nil
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	var se *fenced.StaleError
	if !errors.As(err, &se) || se.Reason != fenced.ReasonSuperseded || se.CurrentFence != 2 || se.CurrentOwner != "B" {
		t.Fatalf("tx across a takeover: %v, want stale superseded by B's fence 2", err)
	}
	if v := value(); v != "A1" {
		t.Fatalf("a stale fenced transaction wrote %q", v)
	}

	// Called stale, fn does not run.
	called := false
	err = c.LeaseTx(ctx(t), *a, func(fenced.Tx) error { called = true; return nil })
	if !errors.Is(err, fenced.ErrStale) || called {
		t.Fatalf("stale tx: %v, fn called %v", err, called)
	}

	b, err := c.GetLease(ctx(t), "job")
	if err != nil {
		t.Fatal(err)
	}
	err = c.LeaseTx(ctx(t), *b, func(tx fenced.Tx) error {
		_, err := tx.Exec(ctx(t), "UPDATE t SET v = 1")
		return err
	})
	if !errors.Is(err, etcddriver.ErrSQLNotSupported) || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("SQL in an etcd fenced transaction: %v", err)
	}
	err = c.LeaseTx(ctx(t), *b, func(tx fenced.Tx) error {
		tx.(*etcddriver.Tx).Put(prefix+"held/job", "1/B")
		tx.(*etcddriver.Tx).Put(key, "B1")
		return nil
	})
	if err == nil || value() != "A1" {
		t.Fatalf("a put under fenced's own prefix: %v, value %q", err, value())
	}
}
