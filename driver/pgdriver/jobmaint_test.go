package pgdriver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/internal/test/testdb"
)

// Retention never deletes a job that a concurrent transaction is taking out
// of its finished state (a retry): the delete skips rows another transaction
// holds, and re-checks the state of those it deletes.
func TestRetentionSkipsAJobBeingRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := migratedClient(t)
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

// Retention reads only the finished jobs past the cutoff: a range of
// fenced_jobs_finished, bounded by the cutoff (read once, before the scan),
// not every finished job filtered one by one. With a volatile bound the
// planner can only filter, and the statement's cost grew with the table
// (1.5 s a maintenance round at 10 million finished jobs).
func TestRetentionReadsARangeOfFinishedJobs(t *testing.T) {
	t.Parallel()
	d := migrated(t, testdb.Postgres(t))
	// The table is empty: without enable_seqscan off the planner would
	// rather scan it.
	plan := explain(t, d.Pool(), "COSTS OFF", "enable_seqscan = off", pgdriver.DeleteFinishedJobsSQL,
		int64(7*24*time.Hour/time.Microsecond), 1000)
	if text := strings.Join(plan, "\n"); !strings.Contains(text, "Index Cond: (finished_at <") {
		t.Fatalf("retention's pick does not read a range of finished_at:\n%s", text)
	}
}
