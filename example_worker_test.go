package fenced_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fenced/fenced"
	_ "github.com/fenced/fenced/driver/sqlitedriver"
)

// doubleArgs are the arguments of a "double" job.
type doubleArgs struct {
	N int `json:"n"`
}

// A Worker runs a typed handler: HandleArgs decodes each job's JSON args
// into the handler's type. A field the type does not declare is ignored (a
// producer may add one before its workers know it); args that do not decode
// fail the attempt, retried like any failure while attempts remain.
func ExampleHandleArgs() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fenced-example-")
	defer os.RemoveAll(dir)
	c, _ := fenced.Open(ctx, "sqlite:"+filepath.Join(dir, "fenced.db"), fenced.Config{})
	defer c.Close()
	c.Migrate(ctx)

	good, _, _ := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "double", Args: doubleArgs{N: 21}})
	newer, _, _ := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "double", Args: map[string]any{"n": 1, "currency": "EUR"}})
	bad, _, _ := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "double", Args: map[string]any{"n": "one"}, MaxAttempts: 1})

	w, _ := c.NewWorker(fenced.WorkerConfig{Owner: "worker-1"})
	w.Handle("double", fenced.HandleArgs(func(ctx context.Context, j *fenced.JobRun, a doubleArgs) error {
		j.SetOutput(map[string]int{"doubled": 2 * a.N})
		return nil // nil completes the job with the output set
	}))
	w.Start(ctx)

	for _, id := range []int64{good.ID, newer.ID, bad.ID} {
		j := waitFinished(ctx, c, id)
		fmt.Printf("job %d: %s after %d attempt(s)", j.ID, j.State, j.Attempt)
		if j.Output != nil {
			fmt.Printf(", output %s", j.Output)
		}
		if j.LastError != "" {
			fmt.Printf(": %s", j.LastError)
		}
		fmt.Println()
	}
	stop, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	w.Stop(stop)

	// Output:
	// job 1: succeeded after 1 attempt(s), output {"doubled":42}
	// job 2: succeeded after 1 attempt(s), output {"doubled":2}
	// job 3: failed after 1 attempt(s): decode args of double job: json: cannot unmarshal string into Go struct field doubleArgs.n of type int
}

// waitFinished polls the job until it is succeeded, failed or cancelled.
func waitFinished(ctx context.Context, c *fenced.Client, id int64) *fenced.Job {
	for {
		j, _, err := c.GetJob(ctx, id)
		if err != nil {
			panic(err)
		}
		if j.State.Finished() {
			return j
		}
		time.Sleep(5 * time.Millisecond)
	}
}
