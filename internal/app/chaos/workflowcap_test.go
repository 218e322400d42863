package chaos

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/testdb"
)

// TestWorkflowWorkloadNeedsWorkflows: on a backend without workflows
// (fenced.CapWorkflows) a workflow run is refused before it starts, with
// the capability's error; a backend that has them is skipped.
func TestWorkflowWorkloadNeedsWorkflows(t *testing.T) {
	for _, b := range []struct {
		name string
		url  func(testing.TB) string
	}{{"mysql", testdb.MySQL}, {"sqlite", testdb.SQLite}} {
		t.Run(b.name, func(t *testing.T) {
			url := b.url(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			be, err := backendOf(url)
			if err != nil {
				t.Fatal(err)
			}
			c, err := be.open(ctx, url, fenced.Config{})
			if err != nil {
				t.Fatal(err)
			}
			supported := c.Supports(fenced.CapWorkflows)
			c.Close()
			if supported {
				t.Skipf("%s has workflows", b.name)
			}
			o := DefaultOptions()
			o.URL, o.Workload = url, WorkloadWorkflow
			rep, err := Run(ctx, o)
			if !errors.Is(err, fenced.ErrWorkflowsNotSupported) {
				t.Fatalf("a workflow run on %s: report %v, error %v; want ErrWorkflowsNotSupported", b.name, rep, err)
			}
			t.Log(err)
		})
	}
}
