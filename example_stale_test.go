package fenced_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fenced/fenced"
	_ "github.com/fenced/fenced/driver/sqlitedriver"
)

// A worker that paused past its job's lease cannot complete the job once it
// was taken back and claimed again: the completion carries the old
// attempt's fence and is refused, and the history shows both attempts.
func ExampleClient_CompleteJob_staleAfterTakeover() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fenced-example-")
	defer os.RemoveAll(dir)
	c, _ := fenced.Open(ctx, "sqlite:"+filepath.Join(dir, "fenced.db"), fenced.Config{})
	defer c.Close()
	c.Migrate(ctx)

	job, _, _ := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "report"})
	claimed, _ := c.ClaimJobs(ctx, fenced.DefaultQueue, "worker-a", 1, 50*time.Millisecond)
	a := claimed[0]
	fmt.Println("A claims with fence", a.Fence)

	// A pauses. Its lease runs out by the database clock...
	for {
		j, _, _ := c.GetJob(ctx, job.ID)
		if j.DecidedAt.After(*j.LeaseExpiresAt) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// ...recovery takes the job back, and B claims it.
	n, _ := c.RecoverJobs(ctx, nil, 10, fenced.Backoff{Base: time.Millisecond, Max: time.Millisecond, Jitter: -1})
	fmt.Println("recovered:", n)
	var b *fenced.Job
	for b == nil {
		time.Sleep(5 * time.Millisecond) // past the retry's backoff
		if claimed, _ := c.ClaimJobs(ctx, fenced.DefaultQueue, "worker-b", 1, time.Minute); len(claimed) == 1 {
			b = claimed[0]
		}
	}
	fmt.Println("B claims with fence", b.Fence)

	// A wakes and completes with its old fence.
	err := c.CompleteJob(ctx, a.Ref(), "A's result")
	var stale *fenced.StaleError
	if errors.As(err, &stale) {
		fmt.Printf("A refused: fence %d is %s, current fence %d held by %s\n",
			stale.Fence, stale.Reason, stale.CurrentFence, stale.CurrentOwner)
	}
	c.CompleteJob(ctx, b.Ref(), "B's result")

	j, attempts, _ := c.GetJob(ctx, job.ID)
	fmt.Printf("job %d: %s, output %s\n", j.ID, j.State, j.Output)
	for _, at := range attempts {
		fmt.Printf("attempt %d by %s with fence %d: %s\n", at.Attempt, at.Owner, at.Fence, at.Outcome)
	}

	// Output:
	// A claims with fence 1
	// recovered: 1
	// B claims with fence 2
	// A refused: fence 1 is superseded, current fence 2 held by worker-b
	// job 1: succeeded, output "B's result"
	// attempt 1 by worker-a with fence 1: lost
	// attempt 2 by worker-b with fence 2: succeeded
}
