package pgdriver_test

import (
	"context"
	"testing"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/internal/testdb"
)

// Retention never deletes a job that a concurrent transaction is taking out
// of its finished state (a retry): the delete skips rows another transaction
// holds, and re-checks the state of those it deletes.
func TestRetentionSkipsAJobBeingRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := fenced.Open(ctx, testdb.Postgres(t), fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	j, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := c.ClaimJobs(ctx, fenced.DefaultQueue, "A", 1, fenced.DefaultJobTTL)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	if err := c.FailJob(ctx, claimed[0].Ref(), "x", 0, false); err != nil {
		t.Fatal(err)
	}
	pool := c.Driver().(*pgdriver.Driver).Pool()
	tx, err := pool.Begin(ctx) // a retry in progress: it holds the row
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `UPDATE fenced_jobs SET state = 'queued', finished_at = NULL WHERE id = $1`, j.ID); err != nil {
		t.Fatal(err)
	}
	n, err := c.DeleteFinishedJobs(ctx, nil, 0, 100)
	if err != nil || n != 0 {
		t.Fatalf("deleted %d (%v) while the job was being retried", n, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _, err := c.GetJob(ctx, j.ID); err != nil || got.State != fenced.JobQueued {
		t.Fatalf("after the retry: %+v %v", got, err)
	}
}
