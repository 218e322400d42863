package pgdriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/pgdriver"
)

// The attempt history has no foreign key (migration 0003 says why);
// deleting or truncating jobs still removes it.
func TestDeletingJobsDeletesTheirHistory(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := migratedClient(t)
	pool := c.Driver().(*pgdriver.Driver).Pool()
	history := func() (n int) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM fenced_job_attempts`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	work := func(n int) {
		t.Helper()
		for range n {
			if _, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k"}); err != nil {
				t.Fatal(err)
			}
		}
		// Each job fails once (a history row) and then succeeds (its row
		// holds that attempt: no history row).
		for _, end := range []string{"fail", "complete"} {
			jobs, err := c.ClaimJobs(ctx, fenced.DefaultQueue, "A", n, time.Minute)
			if err != nil || len(jobs) != n {
				t.Fatalf("claim: %d jobs, %v", len(jobs), err)
			}
			for _, j := range jobs {
				if end == "fail" {
					err = c.FailJob(ctx, j.Ref(), "again", 0, false)
				} else {
					err = c.CompleteJob(ctx, j.Ref(), nil)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}

	work(3)
	if n := history(); n != 3 {
		t.Fatalf("history rows = %d, want 3", n)
	}
	if n, err := c.DeleteFinishedJobs(ctx, nil, 0, 2); err != nil || n != 2 {
		t.Fatalf("delete finished: %d, %v", n, err)
	}
	if n := history(); n != 1 {
		t.Fatalf("history rows after retention = %d, want 1", n)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM fenced_jobs`); err != nil {
		t.Fatal(err)
	}
	if n := history(); n != 0 {
		t.Fatalf("history rows after DELETE = %d, want 0", n)
	}
	work(2)
	if _, err := pool.Exec(ctx, `TRUNCATE fenced_jobs`); err != nil {
		t.Fatal(err)
	}
	if n := history(); n != 0 {
		t.Fatalf("history rows after TRUNCATE = %d, want 0", n)
	}
	work(1)
	if _, err := pool.Exec(ctx, `TRUNCATE fenced_jobs, fenced_job_attempts`); err != nil {
		t.Fatalf("truncate both: %v", err)
	}
}
