package fenced

import (
	"context"
	"testing"
	"time"
)

// A FetchBatch above MaxClaimBatch (with the concurrency to use it) is
// capped, not turned into claims that are all refused as invalid.
func TestLargeFetchBatchStillClaims(t *testing.T) {
	ctx := context.Background()
	c, _ := faultClient(t)
	w, err := c.NewWorker(WorkerConfig{Owner: "w", Queues: map[string]int{DefaultQueue: 2 * MaxClaimBatch},
		FetchBatch: 2 * MaxClaimBatch, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	w.Handle("one", func(ctx context.Context, j *JobRun) error { close(done); return nil })
	if _, _, err := c.Enqueue(ctx, EnqueueParams{Kind: "one"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctx)
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("the worker never ran the job")
	}
}
