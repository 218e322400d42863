package drivertest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runValidation: bad input is refused with ErrInvalid before any statement
// runs, and the database is unchanged.
func runValidation(t *testing.T, b Backend) {
	e := setup(t, b)
	long201 := strings.Repeat("n", 201)
	bad := "\xff\xfe"
	ok := fenced.Lease{Name: "job", Owner: "A", Fence: 1}
	with := func(f func(*fenced.Lease)) fenced.Lease { l := ok; f(&l); return l }
	cases := map[string]func() error{
		"AcquireEmptyName":   func() error { _, err := e.c.AcquireLease(ctx(t), "", "A", time.Second); return err },
		"AcquireLongName":    func() error { _, err := e.c.AcquireLease(ctx(t), long201, "A", time.Second); return err },
		"AcquireBadUTF8":     func() error { _, err := e.c.AcquireLease(ctx(t), bad, "A", time.Second); return err },
		"AcquireControlChar": func() error { _, err := e.c.AcquireLease(ctx(t), "a\x00b", "A", time.Second); return err },
		"AcquireEmptyOwner":  func() error { _, err := e.c.AcquireLease(ctx(t), "job", "", time.Second); return err },
		"AcquireLongOwner":   func() error { _, err := e.c.AcquireLease(ctx(t), "job", long201, time.Second); return err },
		"AcquireZeroTTL":     func() error { _, err := e.c.AcquireLease(ctx(t), "job", "A", 0); return err },
		"AcquireNegativeTTL": func() error { _, err := e.c.AcquireLease(ctx(t), "job", "A", -time.Second); return err },
		"AcquireTTLOver24h":  func() error { _, err := e.c.AcquireLease(ctx(t), "job", "A", 24*time.Hour+1); return err },
		"RenewNegativeFence": func() error {
			_, err := e.c.RenewLease(ctx(t), with(func(l *fenced.Lease) { l.Fence = -1 }), time.Second)
			return err
		},
		"RenewZeroTTL": func() error { _, err := e.c.RenewLease(ctx(t), ok, 0); return err },
		"RenewBadOwner": func() error {
			_, err := e.c.RenewLease(ctx(t), with(func(l *fenced.Lease) { l.Owner = bad }), time.Second)
			return err
		},
		"ReleaseEmptyName":     func() error { return errOf(e.c.ReleaseLease(ctx(t), with(func(l *fenced.Lease) { l.Name = "" }))) },
		"ReleaseNegativeFence": func() error { return errOf(e.c.ReleaseLease(ctx(t), with(func(l *fenced.Lease) { l.Fence = -5 }))) },
		"LeaseTxNegativeFence": func() error {
			return e.c.LeaseTx(ctx(t), with(func(l *fenced.Lease) { l.Fence = -1 }), func(fenced.Tx) error { return nil })
		},
		"GetLongName": func() error { _, err := e.c.GetLease(ctx(t), long201); return err },
		"WriteEmptyKey": func() error {
			_, err := e.c.WriteResource(ctx(t), "", []byte("v"), 1, fenced.WriteOptions{})
			return err
		},
		"WriteNegativeFence": func() error {
			_, err := e.c.WriteResource(ctx(t), "k", []byte("v"), -1, fenced.WriteOptions{})
			return err
		},
		"WriteValueOver1MiB": func() error {
			_, err := e.c.WriteResource(ctx(t), "k", make([]byte, fenced.MaxValueBytes+1), 1, fenced.WriteOptions{})
			return err
		},
		"WriteLongOperationID": func() error {
			_, err := e.c.WriteResource(ctx(t), "k", []byte("v"), 1, fenced.WriteOptions{OperationID: long201})
			return err
		},
		// A transaction of another backend (or none of any) is refused, not
		// a panic.
		"EnqueueInForeignTx": func() error {
			_, _, err := e.c.EnqueueTx(ctx(t), foreignTx{}, fenced.EnqueueParams{Kind: "k"})
			return err
		},
		"CompleteInForeignTx": func() error {
			return e.c.CompleteJobTx(ctx(t), foreignTx{}, fenced.JobRef{ID: 1, Fence: 1}, nil)
		},
	}
	if b.lacks(t, fenced.CapJobs) != nil {
		delete(cases, "EnqueueInForeignTx")
		delete(cases, "CompleteInForeignTx")
	}
	for name, call := range cases {
		err := call()
		var inv *fenced.InvalidError
		if !errors.Is(err, fenced.ErrInvalid) || !errors.As(err, &inv) || inv.Reason == "" {
			t.Errorf("%s: want ErrInvalid with a reason, got %v", name, err)
		}
	}
	ls, err := e.c.ListLeases(ctx(t))
	wantNoErr(t, err, "list")
	if len(ls) != 0 {
		t.Fatalf("invalid input created leases: %+v", ls)
	}
	if _, err := e.c.ReadResource(ctx(t), "k"); !errors.Is(err, fenced.ErrNotFound) {
		t.Fatalf("invalid input created a resource: %v", err)
	}
}

// foreignTx is a transaction of no backend.
type foreignTx struct{ fenced.Tx }
