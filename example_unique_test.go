package fenced_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/sqlitedriver"
)

// A unique job by some of its args: a repeat
// returns the job that holds the slot. With the states queued and running
// only, a failure frees the slot, and a retry of the failed job once a
// newer job took it is refused, naming that job.
func ExampleUniqueOptions() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fenced-example-")
	defer os.RemoveAll(dir)
	d, _ := sqlitedriver.Open(ctx, filepath.Join(dir, "fenced.db"))
	defer d.Close()
	c := fenced.New(d, fenced.Config{})
	c.Migrate(ctx)

	sync := func(page int) *fenced.Job {
		j, existing, err := c.Enqueue(ctx, fenced.EnqueueParams{
			Kind: "sync-user",
			Args: map[string]int{"user": 7, "page": page},
			// ByPeriod: time.Hour would also make it one job per hour of run time.
			Unique: &fenced.UniqueOptions{ArgsKeys: []string{"user"},
				ByState: []fenced.JobState{fenced.JobQueued, fenced.JobRunning}},
		})
		if err != nil {
			panic(err)
		}
		fmt.Printf("page %d: job %d, existing %v\n", page, j.ID, existing)
		return j
	}
	first := sync(1)
	sync(2) // the same user: the first job

	claimed, _ := c.ClaimJobs(ctx, fenced.DefaultQueue, "worker-1", 1, time.Minute)
	c.FailJob(ctx, claimed[0].Ref(), "upstream down", 0, true) // failed: the slot is free
	sync(3)

	_, err := c.RetryJob(ctx, first.ID)
	var ue *fenced.UniqueConflictError
	fmt.Println("retry:", errors.As(err, &ue), ue.ExistingID)

	// Output:
	// page 1: job 1, existing false
	// page 2: job 1, existing true
	// page 3: job 2, existing false
	// retry: true 2
}
