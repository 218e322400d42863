package fencedtest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/fenced/fenced"
)

// RequireInsertedArgs is RequireInserted for a typed kind (fenced.JobArgs):
// the kind is T's, and the job's args are returned decoded into a T, as a
// handler registered with fenced.HandleKind would get them.
func RequireInsertedArgs[T fenced.JobArgs](t testing.TB, c *fenced.Client, m *Match) (*fenced.Job, T) {
	t.Helper()
	j := RequireInserted(t, c, kindOf[T](t), m)
	var args T
	if err := json.Unmarshal(j.Args, &args); err != nil {
		t.Fatalf("fencedtest: args of %s job %d do not decode into %T: %v", j.Kind, j.ID, args, err)
	}
	return j, args
}

// NewKindWorker is NewWorker for a typed kind: fn runs the jobs of T's kind,
// their args decoded into a T as fenced.HandleKind decodes them.
func NewKindWorker[T fenced.JobArgs](t testing.TB, c *fenced.Client, fn func(ctx context.Context, j *fenced.JobRun, args T) error, cfg fenced.WorkerConfig) *Worker {
	t.Helper()
	if fn == nil {
		t.Fatalf("fencedtest: NewKindWorker needs a handler")
	}
	return NewWorker(t, c, kindOf[T](t), fenced.HandleArgs(fn), cfg)
}

// kindOf is the kind of T's zero value (fenced.KindOf); the test fails
// when it has none.
func kindOf[T fenced.JobArgs](t testing.TB) string {
	t.Helper()
	kind, err := fenced.KindOf[T]()
	if err != nil {
		t.Fatalf("fencedtest: %v", err)
	}
	return kind
}
