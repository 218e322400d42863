package mysqldriver_test

import (
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/mysqldriver"
)

// TestRetentionSkipsAJobBeingRetried: retention never deletes a job that a
// concurrent transaction is taking out of its finished state.
func TestRetentionSkipsAJobBeingRetried(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	j, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k", MaxAttempts: 1})
	must(t, err, "enqueue")
	claimed, err := c.ClaimJobs(ctx(t), fenced.DefaultQueue, "A", 1, time.Minute)
	must(t, err, "claim")
	must(t, c.FailJob(ctx(t), claimed[0].Ref(), "x", 0, false), "fail")
	tx, err := c.Driver().(*mysqldriver.Driver).DB().BeginTx(ctx(t), nil) // a retry in progress holds the row
	must(t, err, "begin")
	defer tx.Rollback()
	_, err = tx.ExecContext(ctx(t), `UPDATE fenced_jobs SET state = 'queued', finished_at = NULL WHERE id = ?`, j.ID)
	must(t, err, "retry in a transaction")
	n, err := c.DeleteFinishedJobs(ctx(t), nil, 0, 100)
	if err != nil || n != 0 {
		t.Fatalf("deleted %d (%v) while the job was being retried", n, err)
	}
	must(t, tx.Commit(), "commit")
	if got, _, err := c.GetJob(ctx(t), j.ID); err != nil || got.State != fenced.JobQueued {
		t.Fatalf("after the retry: %+v %v", got, err)
	}
}
