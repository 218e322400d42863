package pgdriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/testdb"
)

// TestAWorkerOnAPoolOfOneConnection: the enqueue listener does not take a
// pool's only connection (every other call would wait for it for ever):
// the worker polls instead, and runs its job.
func TestAWorkerOnAPoolOfOneConnection(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := fenced.Open(ctx, testdb.Postgres(t)+"&pool_max_conns=1", fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := c.NewWorker(fenced.WorkerConfig{PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	w.Handle("k", func(ctx context.Context, j *fenced.JobRun) error { close(done); return nil })
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	if _, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the job never ran: the pool's one connection is taken")
	}
}
