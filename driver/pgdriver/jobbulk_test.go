package pgdriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// TestABulkCopyWakesOtherClients: jobs copied in by EnqueueBulk notify
// their queue as an INSERT does (the statement trigger fires for COPY), so
// the idle worker of another Client, polling once an hour, runs them at
// once.
func TestABulkCopyWakesOtherClients(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	producer, workers := twoClients(t)
	w, err := workers.NewWorker(fenced.WorkerConfig{Queues: map[string]int{"bulk": 4}, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{}, 3)
	w.Handle("k", func(context.Context, *fenced.JobRun) error { ran <- struct{}{}; return nil })
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	time.Sleep(300 * time.Millisecond) // the worker claimed nothing and waits
	ps := []fenced.EnqueueParams{{Kind: "k", Queue: "bulk"}, {Kind: "k", Queue: "bulk"}, {Kind: "k", Queue: "bulk"}}
	if n, err := producer.EnqueueBulk(ctx, nil, ps); err != nil || n != 3 {
		t.Fatalf("enqueue bulk = %d, %v", n, err)
	}
	for range ps {
		select {
		case <-ran:
		case <-time.After(20 * time.Second):
			t.Fatal("the other Client's worker was not woken by the copy")
		}
	}
}
