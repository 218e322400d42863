package fenced_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fenced/fenced"
	_ "github.com/fenced/fenced/driver/sqlitedriver"
)

// A workflow's tasks run after the tasks they depend on: "total" runs once
// both prices succeeded, and reads their outputs by task name. Each release
// is written by the completion of the dependency's current attempt, in the
// statement (here, the transaction) that records it.
func ExampleClient_EnqueueWorkflow() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fenced-example-")
	defer os.RemoveAll(dir)
	c, _ := fenced.Open(ctx, "sqlite:"+filepath.Join(dir, "fenced.db"), fenced.Config{})
	defer c.Close()
	c.Migrate(ctx)

	wf, err := c.EnqueueWorkflow(ctx, nil, fenced.WorkflowParams{Name: "basket", Tasks: []fenced.WorkflowTaskParams{
		{Name: "apples", Job: fenced.EnqueueParams{Kind: "price", Args: map[string]int{"cents": 120}}},
		{Name: "pears", Job: fenced.EnqueueParams{Kind: "price", Args: map[string]int{"cents": 80}}},
		{Name: "total", Job: fenced.EnqueueParams{Kind: "total"}, DependsOn: []string{"apples", "pears"}},
	}})
	if err != nil {
		panic(err)
	}
	for _, t := range wf.Tasks {
		fmt.Printf("%s: %s\n", t.Name, t.State)
	}

	w, _ := c.NewWorker(fenced.WorkerConfig{Owner: "worker-1", PollInterval: 10 * time.Millisecond})
	w.Handle("price", func(ctx context.Context, j *fenced.JobRun) error {
		j.SetOutput(json.RawMessage(j.Args))
		return nil
	})
	w.Handle("total", func(ctx context.Context, j *fenced.JobRun) error {
		deps, err := c.TaskDependencies(ctx, j.ID)
		if err != nil {
			return err
		}
		sum := 0
		for _, d := range deps {
			var p struct{ Cents int }
			if err := json.Unmarshal(d.Output, &p); err != nil {
				return err
			}
			sum += p.Cents
		}
		j.SetOutput(map[string]int{"cents": sum})
		return nil
	})
	w.Start(ctx)
	total := waitFinished(ctx, c, wf.Tasks[2].JobID)
	stop, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	w.Stop(stop)

	done, _ := c.GetWorkflow(ctx, wf.ID)
	fmt.Printf("total: %s, output %s\n", total.State, total.Output)
	fmt.Printf("workflow %q: %s\n", done.Name, done.State)

	// Output:
	// apples: queued
	// pears: queued
	// total: pending
	// total: succeeded, output {"cents":200}
	// workflow "basket": succeeded
}
