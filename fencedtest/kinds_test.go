package fencedtest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedtest"
)

type receipt struct {
	Order int `json:"order"`
}

func (receipt) Kind() string { return "receipt" }

// The typed helpers take the kind from the args' type: RequireInsertedArgs
// finds the job and decodes its args, NewKindWorker runs it through the
// real path with the args decoded, and a job of another kind is not the
// type's.
func TestTypedKindHelpers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := fencedtest.NewSQLite(t, fenced.Config{})
	if _, _, err := c.EnqueueArgs(ctx, receipt{Order: 7}, &fenced.EnqueueOptions{Queue: "shop"}); err != nil {
		t.Fatal(err)
	}
	j, args := fencedtest.RequireInsertedArgs[receipt](t, c, &fencedtest.Match{Queue: "shop"})
	if j.Kind != "receipt" || args.Order != 7 {
		t.Fatalf("found %s job with args %+v, want receipt with order 7", j.Kind, args)
	}
	if msg := failure(t, func(tb testing.TB) {
		fencedtest.RequireInsertedArgs[receipt](tb, c, &fencedtest.Match{Args: receipt{Order: 8}})
	}); !strings.Contains(msg, "receipt") {
		t.Fatalf("a receipt job that was not enqueued was found (failure %q)", msg)
	}
	var got receipt
	w := fencedtest.NewKindWorker(t, c, func(ctx context.Context, r *fenced.JobRun, a receipt) error {
		got = a
		return nil
	}, fenced.WorkerConfig{})
	if res := w.WorkJob(ctx, t, j); res.Job.State != fenced.JobSucceeded || got.Order != 7 {
		t.Fatalf("typed worker: job %s, handler got %+v", res.Job.State, got)
	}
}
