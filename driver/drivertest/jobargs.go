package drivertest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// invoiceArgs is a typed kind with default options.
type invoiceArgs struct {
	Customer string `json:"customer"`
	Cents    int    `json:"cents"`
}

func (invoiceArgs) Kind() string { return "invoice" }
func (invoiceArgs) EnqueueOptions() fenced.EnqueueOptions {
	return fenced.EnqueueOptions{Queue: "billing", Priority: 3, MaxAttempts: 4, Tags: []string{"billing"}}
}

// plainArgs is a typed kind without options.
type plainArgs struct {
	N int `json:"n"`
}

func (plainArgs) Kind() string { return "plain" }

// pointerKind declares Kind on the pointer type: its zero value is nil.
type pointerKind struct{ name string }

func (p *pointerKind) Kind() string { return p.name }

// runTypedKinds: a typed job is enqueued under its type's kind with its
// type's default options, which given options override field by field;
// HandleKind binds the handler to the same kind and decodes the args into
// the type; a second registration of a kind, a nil handler or a type
// whose zero value has no kind are errors, and Start refuses with them.
func runTypedKinds(t *testing.T, b Backend) {
	t.Run("DefaultsAndOverrides", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j, existing, err := e.c.EnqueueArgs(ctx(t), invoiceArgs{Customer: "c1", Cents: 250}, nil)
		wantNoErr(t, err, "enqueue typed")
		if existing || j.Kind != "invoice" || j.Queue != "billing" || j.Priority != 3 || j.MaxAttempts != 4 || len(j.Tags) != 1 {
			t.Fatalf("typed job = %+v (existing %v), want kind invoice, queue billing, priority 3, max attempts 4, tag billing", j, existing)
		}
		var got invoiceArgs
		if err := json.Unmarshal(j.Args, &got); err != nil || got != (invoiceArgs{"c1", 250}) {
			t.Fatalf("args = %s (%v), want the value enqueued", j.Args, err)
		}
		j2, _, err := e.c.EnqueueArgs(ctx(t), invoiceArgs{Customer: "c2"}, &fenced.EnqueueOptions{Priority: 7, IdempotencyKey: "inv-c2"})
		wantNoErr(t, err, "enqueue typed with options")
		if j2.Queue != "billing" || j2.Priority != 7 || j2.MaxAttempts != 4 || j2.IdempotencyKey != "inv-c2" {
			t.Fatalf("typed job with options = %+v, want queue billing (the type's), priority 7, max attempts 4, key inv-c2", j2)
		}
		j3, _, err := e.c.EnqueueArgs(ctx(t), plainArgs{N: 1}, &fenced.EnqueueOptions{Queue: "q2"})
		wantNoErr(t, err, "enqueue typed without defaults")
		if j3.Kind != "plain" || j3.Queue != "q2" || j3.MaxAttempts != fenced.DefaultMaxAttempts {
			t.Fatalf("typed job without defaults = %+v", j3)
		}
		if _, _, err := e.c.EnqueueArgs(ctx(t), nil, nil); !errors.Is(err, fenced.ErrInvalid) {
			t.Fatalf("enqueue of nil args: %v, want invalid", err)
		}
		if _, _, err := e.c.EnqueueArgs(ctx(t), (*pointerKind)(nil), nil); !errors.Is(err, fenced.ErrInvalid) {
			t.Fatalf("enqueue of a nil pointer: %v, want invalid", err)
		}
	})
	t.Run("InsideATransaction", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		l := e.acquire(t, "enq", "A", long)
		rollback := errors.New("rollback")
		err := e.c.LeaseTx(ctx(t), *l, func(tx fenced.Tx) error {
			if _, _, err := e.c.EnqueueArgsTx(ctx(t), tx, plainArgs{N: 1}, nil); err != nil {
				return err
			}
			return rollback
		})
		wantErrIs(t, err, rollback)
		err = e.c.LeaseTx(ctx(t), *l, func(tx fenced.Tx) error {
			_, _, err := e.c.EnqueueArgsTx(ctx(t), tx, invoiceArgs{Customer: "tx"}, nil)
			return err
		})
		wantNoErr(t, err, "enqueue typed in a transaction")
		jobs, err := e.c.ListJobs(ctx(t), fenced.JobFilter{Queue: "billing"})
		wantNoErr(t, err, "list")
		all, err := e.c.ListJobs(ctx(t), fenced.JobFilter{})
		wantNoErr(t, err, "list")
		if len(jobs) != 1 || jobs[0].Kind != "invoice" || len(all) != 1 {
			t.Fatalf("jobs after a rolled-back and a committed typed enqueue = %+v (all %d)", jobs, len(all))
		}
	})
	t.Run("HandleKindRunsTheTypedHandler", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		w, err := e.c.NewWorker(fenced.WorkerConfig{Queues: map[string]int{"billing": 2}, PollInterval: 10 * time.Millisecond})
		wantNoErr(t, err, "new worker")
		got := make(chan invoiceArgs, 1)
		wantNoErr(t, fenced.HandleKind(w, func(ctx context.Context, j *fenced.JobRun, a invoiceArgs) error {
			got <- a
			return nil
		}), "handle kind")
		wantNoErr(t, w.Start(context.Background()), "start")
		defer stopWorker(t, w)
		// A field the type does not declare is ignored.
		j, _, err := e.c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "invoice", Queue: "billing",
			Args: json.RawMessage(`{"customer": "c3", "cents": 9, "currency": "EUR"}`)})
		wantNoErr(t, err, "enqueue")
		select {
		case a := <-got:
			if a != (invoiceArgs{"c3", 9}) {
				t.Fatalf("handler got %+v", a)
			}
		case <-time.After(time.Minute):
			t.Fatal("the typed handler did not run within a minute")
		}
		e.waitState(t, j.ID, fenced.JobSucceeded)
	})
	t.Run("RegistrationErrors", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		ok := func(context.Context, *fenced.JobRun, plainArgs) error { return nil }
		w, err := e.c.NewWorker(fenced.WorkerConfig{})
		wantNoErr(t, err, "new worker")
		wantNoErr(t, fenced.HandleKind(w, ok), "first registration")
		if err := fenced.HandleKind(w, ok); err == nil || !strings.Contains(err.Error(), `"plain"`) {
			t.Fatalf("second registration of kind plain: %v, want an error naming it", err)
		}
		if err := w.Handle("plain", func(context.Context, *fenced.JobRun) error { return nil }); err == nil {
			t.Fatal("Handle of a kind HandleKind registered succeeded")
		}
		if err := w.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "twice") {
			stopWorker(t, w)
			t.Fatalf("start after a refused registration: %v, want that error", err)
		}
		w2, err := e.c.NewWorker(fenced.WorkerConfig{})
		wantNoErr(t, err, "new worker")
		if err := w2.Handle("k", nil); err == nil {
			t.Fatal("Handle of a nil handler succeeded")
		}
		if err := fenced.HandleKind[plainArgs](w2, nil); err == nil {
			t.Fatal("HandleKind of a nil handler succeeded")
		}
		w3, err := e.c.NewWorker(fenced.WorkerConfig{})
		wantNoErr(t, err, "new worker")
		if err := fenced.HandleKind(w3, func(context.Context, *fenced.JobRun, *pointerKind) error { return nil }); !errors.Is(err, fenced.ErrInvalid) {
			t.Fatalf("HandleKind of a pointer type with no kind on its zero value: %v, want invalid", err)
		}
		if err := w3.Start(context.Background()); !errors.Is(err, fenced.ErrInvalid) {
			stopWorker(t, w3)
			t.Fatalf("start after it: %v", err)
		}
	})
}
