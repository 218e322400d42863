package mysqldriver_test

import (
	"testing"

	"github.com/fenced/fenced"
)

// TestFenceAdvanceMovesJobIDsOn: job ids after an advance are above every
// id before by the step, though AUTO_INCREMENT cannot be altered inside a
// transaction.
func TestFenceAdvanceMovesJobIDsOn(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	var last *fenced.Job
	for range 3 {
		j, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k"})
		must(t, err, "enqueue")
		last = j
	}
	_, err := c.AdvanceFences(ctx(t), 1000)
	must(t, err, "advance")
	next, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k"})
	must(t, err, "enqueue after")
	if next.ID <= last.ID+1000 {
		t.Fatalf("id after advance %d, want above %d", next.ID, last.ID+1000)
	}
	jobs, err := c.ListJobs(ctx(t), fenced.JobFilter{})
	must(t, err, "list")
	if len(jobs) != 4 {
		t.Fatalf("%d jobs, want 4: the placeholders must be gone", len(jobs))
	}
}
