package drivertest

import (
	"strings"
	"testing"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedtype"
)

// runJobError: a job's error is that of its latest failed, cancelled or
// lost attempt until the job succeeds; a completion clears it, and the
// attempt history keeps every attempt's error. A stale completion clears
// nothing.
func runJobError(t *testing.T, b Backend) {
	t.Run("CompletionAfterAFailureClearsIt", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", long)
		wantNoErr(t, e.c.FailJob(ctx(t), a.Ref(), "first try failed", 0, false), "fail")
		if got, _ := e.job(t, j.ID); got.LastError != "first try failed" {
			t.Fatalf("after the failure, error = %q", got.LastError)
		}
		a = e.claimOne(t, "A", long)
		wantNoErr(t, e.c.CompleteJob(ctx(t), a.Ref(), "ok"), "complete")
		got, attempts := e.job(t, j.ID)
		if got.State != fenced.JobSucceeded || got.LastError != "" {
			t.Fatalf("after the success, state %s error %q, want succeeded without an error", got.State, got.LastError)
		}
		if len(attempts) != 2 || attempts[0].Outcome != fencedtype.OutcomeRetry || attempts[0].Error != "first try failed" ||
			attempts[1].Outcome != fencedtype.OutcomeSucceeded || attempts[1].Error != "" {
			t.Fatalf("history = %+v", attempts)
		}
	})
	t.Run("CompletionAfterALostAttemptClearsItNotTheStaleOnes", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j, a, bj := e.takenOver(t)
		// A comes back after the takeover: its completion is refused and
		// leaves the job, its error included, as it was.
		before, _ := e.job(t, j.ID)
		if !strings.Contains(before.LastError, "lease expired") {
			t.Fatalf("after recovery, error = %q", before.LastError)
		}
		wantStale(t, e.c.CompleteJob(ctx(t), a.Ref(), "A's"), a.Fence, bj.Fence, "B", fenced.ReasonSuperseded)
		if got, _ := e.job(t, j.ID); got.LastError != before.LastError || got.State != fenced.JobRunning || got.Output != nil {
			t.Fatalf("A's stale completion changed the job: %+v", got)
		}
		wantNoErr(t, e.c.CompleteJob(ctx(t), bj.Ref(), "B's"), "B completes")
		got, attempts := e.job(t, j.ID)
		if got.State != fenced.JobSucceeded || got.LastError != "" || string(got.Output) != `"B's"` {
			t.Fatalf("after B's success = %+v", got)
		}
		if len(attempts) != 2 || attempts[0].Outcome != fencedtype.OutcomeLost || attempts[0].Error != before.LastError {
			t.Fatalf("history = %+v, want the lost attempt with its error first", attempts)
		}
	})
}
