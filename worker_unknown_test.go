package fenced_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/testdb"
)

// TestAWorkersEndWhoseReplyWasLostIsWritten: the reply to a worker's
// completion is lost with its connection (a failover), though the
// completion committed. The worker writes it again, is told the attempt no
// longer runs under its own fence, reads in its history that it ended by
// that write, and counts it succeeded: neither stale nor lost. (One claim at
// a time, so that the reply cut is the completion's: the next claim waits
// for the slot the job frees once its end is written.)
func TestAWorkersEndWhoseReplyWasLostIsWritten(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	direct := testdb.Postgres(t)
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	p := testdb.NewProxy(t, u.Host)
	u.Host = p.Addr()
	q := u.Query()
	q.Set("pool_max_conns", "2") // the enqueue listener's, and one for the rest
	u.RawQuery = q.Encode()
	c, err := fenced.Open(ctx, u.String(), fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := c.NewWorker(fenced.WorkerConfig{Queues: map[string]int{fenced.DefaultQueue: 1}, PollInterval: time.Hour, LeaseTTL: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan int64)
	release := make(chan struct{})
	w.Handle("k", func(ctx context.Context, j *fenced.JobRun) error {
		ran <- j.ID
		<-release
		return nil
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(context.Background())
	// Watched from a client of its own, beside the proxy: the reply the
	// proxy cuts must be the worker's.
	watch, err := fenced.Open(ctx, direct, fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	waitSucceeded := func(id int64) {
		t.Helper()
		for {
			j, _, err := watch.GetJob(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if j.State == fenced.JobSucceeded {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// A first job, so the one working connection has the end statement
	// prepared: the reply cut below is the one to its execution.
	if _, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k"}); err != nil {
		t.Fatal(err)
	}
	first := <-ran
	release <- struct{}{}
	waitSucceeded(first)
	if _, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k"}); err != nil {
		t.Fatal(err)
	}
	id := <-ran
	p.CutNextReply()
	release <- struct{}{}
	waitSucceeded(id)
	deadline := time.Now().Add(30 * time.Second)
	for w.Stats().Succeeded < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if s := w.Stats(); s.Succeeded != 2 || s.Stale != 0 || s.Lost != 0 {
		t.Fatalf("stats = %+v, want 2 succeeded, none stale or lost", s)
	}
}
