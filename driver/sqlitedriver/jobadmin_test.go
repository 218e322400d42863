package sqlitedriver_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

func TestJobCancelAndRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := setupJobs(t)
	queued := enqueue(t, d, newJob("q"))[0]
	j, err := d.CancelJob(ctx, queued.ID)
	if err != nil || j.State != fencedtype.JobCancelled || j.FinishedAt == nil || j.CancelRequested {
		t.Fatalf("cancel queued: %+v, %v", j, err)
	}
	if _, err := d.CancelJob(ctx, queued.ID); !errors.Is(err, fencedtype.ErrJobFinished) {
		t.Fatalf("cancel cancelled: %v", err)
	}
	if _, err := d.CancelJob(ctx, 9999); !errors.Is(err, fencedtype.ErrNotFound) {
		t.Fatalf("cancel unknown: %v", err)
	}
	j, err = d.RetryJob(ctx, queued.ID)
	if err != nil || j.State != fencedtype.JobQueued || j.FinishedAt != nil || j.MaxAttempts != 3 || j.RunAt.After(j.DecidedAt) {
		t.Fatalf("retry cancelled: %+v, %v", j, err)
	}
	if _, err := d.RetryJob(ctx, queued.ID); !errors.Is(err, fencedtype.ErrJobNotFinished) {
		t.Fatalf("retry queued: %v", err)
	}
	if _, err := d.RetryJob(ctx, 9999); !errors.Is(err, fencedtype.ErrNotFound) {
		t.Fatalf("retry unknown: %v", err)
	}

	// A failed job retried gets max_attempts more attempts.
	ref := claim(t, d, "q", "w", 1, time.Hour)[0]
	if err := endJobs(t, d, fencedtype.JobEnd{Ref: fencedtype.JobRef{ID: ref.ID, Fence: ref.Fence}, Kind: fencedtype.EndFail, Discard: true})[0]; err != nil {
		t.Fatal(err)
	}
	if j, err = d.RetryJob(ctx, ref.ID); err != nil || j.State != fencedtype.JobQueued || j.MaxAttempts != 4 || j.Attempt != 1 {
		t.Fatalf("retry failed: %+v, %v", j, err)
	}
	run := claim(t, d, "q", "w", 1, time.Hour)[0]
	if err := endJobs(t, d, fencedtype.JobEnd{Ref: fencedtype.JobRef{ID: run.ID, Fence: run.Fence}, Kind: fencedtype.EndComplete})[0]; err != nil {
		t.Fatal(err)
	}
	if _, err := d.CancelJob(ctx, run.ID); !errors.Is(err, fencedtype.ErrJobFinished) {
		t.Fatalf("cancel succeeded: %v", err)
	}
	if _, err := d.RetryJob(ctx, run.ID); !errors.Is(err, fencedtype.ErrJobNotFinished) {
		t.Fatalf("retry succeeded: %v", err)
	}
}

func TestJobListAndCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := setupJobs(t)
	other := newJob("other")
	other.Kind = "sms"
	in := enqueue(t, d, newJob("q"), newJob("q"), other, newJob("q"))
	claim(t, d, "q", "w", 1, time.Hour)
	page, err := d.ListJobs(ctx, fencedtype.JobFilter{Queue: "q", State: fencedtype.JobQueued, AfterID: in[0].ID, Limit: 1})
	if err != nil || !slices.Equal(ids(page), []int64{in[1].ID}) {
		t.Fatalf("list page: %v, %v", ids(page), err)
	}
	if sms, _ := d.ListJobs(ctx, fencedtype.JobFilter{Kind: "sms", Limit: 10}); !slices.Equal(ids(sms), []int64{in[2].ID}) {
		t.Fatalf("list by kind: %v", ids(sms))
	}
	counts, err := d.CountJobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []fencedtype.JobCount{{Queue: "other", State: fencedtype.JobQueued, Count: 1},
		{Queue: "q", State: fencedtype.JobQueued, Count: 2}, {Queue: "q", State: fencedtype.JobRunning, Count: 1}}
	if !slices.Equal(counts, want) {
		t.Fatalf("counts %+v, want %+v", counts, want)
	}
}
