package fenced_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/fenced/fenced"
	_ "github.com/fenced/fenced/driver/sqlitedriver"
)

// Middleware and hooks: an enqueue middleware stamps every job with a
// tenant, a work middleware logs each attempt around its handler, an error
// handler discards a job whose failure retrying cannot mend, and an end
// hook reports each attempt's outcome once it is written.
func ExampleWorkMiddleware() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fenced-example-")
	defer os.RemoveAll(dir)

	errPermanent := errors.New("card declined")
	ended := make(chan string, 2)
	var mu sync.Mutex
	var started []string // the work middleware's log
	c, _ := fenced.Open(ctx, "sqlite:"+filepath.Join(dir, "fenced.db"), fenced.Config{
		EnqueueMiddleware: []fenced.EnqueueMiddleware{
			func(ctx context.Context, b *fenced.EnqueueBatch, next func(context.Context) (fenced.Enqueued, error)) (fenced.Enqueued, error) {
				for i := range b.Jobs {
					b.Jobs[i].Queue = "tenant-42"
				}
				return next(ctx)
			},
		},
		WorkMiddleware: []fenced.WorkMiddleware{
			func(ctx context.Context, j *fenced.JobRun, next func(context.Context) error) error {
				mu.Lock()
				started = append(started, fmt.Sprintf("start %s on %s, attempt %d", j.Kind, j.Queue, j.Attempt))
				mu.Unlock()
				return next(ctx)
			},
		},
		Hooks: []fenced.Hooks{{
			OnError: func(ctx context.Context, j *fenced.JobRun, err error) *fenced.ErrorDecision {
				if errors.Is(err, errPermanent) {
					return &fenced.ErrorDecision{Discard: true}
				}
				return nil // retried after the backoff
			},
			OnEnd: func(ctx context.Context, j *fenced.JobRun, e fenced.AttemptEnd) {
				ended <- fmt.Sprintf("%s: %s", j.Kind, e.Outcome)
			},
		}},
	})
	defer c.Close()
	c.Migrate(ctx)

	w, _ := c.NewWorker(fenced.WorkerConfig{Owner: "worker-1", Queues: map[string]int{"tenant-42": 1}})
	w.Handle("charge", func(ctx context.Context, j *fenced.JobRun) error { return errPermanent })
	w.Handle("email", func(ctx context.Context, j *fenced.JobRun) error { return nil })
	c.Enqueue(ctx, fenced.EnqueueParams{Kind: "charge", Priority: 0})
	c.Enqueue(ctx, fenced.EnqueueParams{Kind: "email", Priority: 1})
	w.Start(ctx)
	var outcomes []string
	for range 2 {
		select {
		case s := <-ended:
			outcomes = append(outcomes, s)
		case <-time.After(30 * time.Second):
			outcomes = append(outcomes, "timed out")
		}
	}
	w.Stop(ctx)
	// The attempts start in claim order (one at a time); an end hook runs
	// once the outcome is written, which may be after the next attempt
	// started, so the outcomes are printed in order of kind.
	mu.Lock()
	for _, s := range started {
		fmt.Println(s)
	}
	mu.Unlock()
	slices.Sort(outcomes)
	for _, s := range outcomes {
		fmt.Println(s)
	}
	// Output:
	// start charge on tenant-42, attempt 1
	// start email on tenant-42, attempt 1
	// charge: failed
	// email: succeeded
}
