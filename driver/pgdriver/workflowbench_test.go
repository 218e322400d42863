package pgdriver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// BenchmarkEnqueueWorkflow compares, in one loop, the enqueue of a chain of
// ten tasks as a workflow with the enqueue of ten plain jobs in one
// EnqueueMany (b.N counts jobs), so that a shared machine's load weighs on
// both alike: the ratio of the two rates is the figure to read.
func BenchmarkEnqueueWorkflow(b *testing.B) {
	ctx := context.Background()
	c := openPool(b, Backend.NewURL(b), 1)
	if _, err := c.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	const n = 10
	tasks := make([]fenced.WorkflowTaskParams, n)
	jobs := make([]fenced.EnqueueParams, n)
	for i := range tasks {
		tasks[i] = fenced.WorkflowTaskParams{Name: fmt.Sprintf("t%d", i), Job: fenced.EnqueueParams{Kind: "k"}}
		if i > 0 {
			tasks[i].DependsOn = []string{fmt.Sprintf("t%d", i-1)}
		}
		jobs[i] = fenced.EnqueueParams{Kind: "k"}
	}
	var wf, plain float64
	b.ResetTimer()
	for done := 0; done < b.N; done += 2 * n {
		t0 := nowSeconds()
		if _, err := c.EnqueueWorkflow(ctx, nil, fenced.WorkflowParams{Name: "w", Tasks: tasks}); err != nil {
			b.Fatal(err)
		}
		t1 := nowSeconds()
		if _, err := c.EnqueueMany(ctx, nil, jobs); err != nil {
			b.Fatal(err)
		}
		wf, plain = wf+t1-t0, plain+nowSeconds()-t1
	}
	rounds := float64((b.N + 2*n - 1) / (2 * n))
	b.ReportMetric(rounds*n/wf, "workflow-jobs/s")
	b.ReportMetric(rounds*n/plain, "plain-jobs/s")
}

func nowSeconds() float64 { return float64(time.Now().UnixNano()) / 1e9 }
