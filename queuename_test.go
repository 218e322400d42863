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

// TestABadQueueNameIsRefusedInOneWording: enqueue, a job list, a claim and
// a worker refuse a queue name that is not one with the same *InvalidError,
// before any statement runs.
func TestABadQueueNameIsRefusedInOneWording(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := fenced.Open(ctx, testdb.SQLite(t), fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, q := range []string{"a b", "-lead", "tab\there", strings.Repeat("q", 101)} {
		_, _, enqueue := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k", Queue: q})
		_, list := c.ListJobs(ctx, fenced.JobFilter{Queue: q})
		_, claim := c.ClaimJobs(ctx, q, "w", 1, time.Minute)
		_, worker := c.NewWorker(fenced.WorkerConfig{Queues: map[string]int{q: 1}})
		var inv *fenced.InvalidError
		if !errors.As(enqueue, &inv) || inv.Field != "queue" || !strings.Contains(inv.Reason, "must be 1–100 letters") {
			t.Fatalf("enqueue on queue %q: %v, want the queue name's rule", q, enqueue)
		}
		for what, err := range map[string]error{"list": list, "claim": claim, "worker": worker} {
			if err == nil || err.Error() != enqueue.Error() || !errors.Is(err, fenced.ErrInvalid) {
				t.Errorf("%s on queue %q: %v, want %v", what, q, err, enqueue)
			}
		}
	}
}
