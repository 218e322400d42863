package drivertest

import (
	"errors"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runCancelJob: a queued job is cancelled at once, a running one is asked
// to stop and ends cancelled through its worker's fenced write (docs/design.md §6.6).
func runCancelJob(t *testing.T, b Backend) {
	t.Run("CancelQueuedAtOnceRunningOnRequest", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		q := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Delay: time.Hour})
		c, err := e.c.CancelJob(ctx(t), q.ID)
		wantNoErr(t, err, "cancel queued")
		if c.State != fenced.JobCancelled || c.FinishedAt == nil {
			t.Fatalf("cancelled = %+v", c)
		}
		e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", long)
		c, err = e.c.CancelJob(ctx(t), a.ID)
		wantNoErr(t, err, "cancel running")
		if c.State != fenced.JobRunning || !c.CancelRequested {
			t.Fatalf("after cancel request = %+v", c)
		}
		hb, err := e.c.HeartbeatJobs(ctx(t), []fenced.JobRef{a.Ref()}, long)
		wantNoErr(t, err, "heartbeat")
		if len(hb.CancelRequested) != 1 {
			t.Fatalf("heartbeat = %+v", hb)
		}
		errs, _, err := e.c.EndJobs(ctx(t), nil, []fenced.JobEnd{{Ref: a.Ref(), Kind: fenced.EndCancel, Error: "stopped"}})
		if err != nil || errs[0] != nil {
			t.Fatalf("cancel end: %v %v", err, errs)
		}
		got, attempts := e.job(t, a.ID)
		if got.State != fenced.JobCancelled || len(attempts) != 1 || attempts[0].Outcome != "cancelled" {
			t.Fatalf("final = %+v %+v", got, attempts)
		}
		r, err := e.c.RetryJob(ctx(t), a.ID)
		wantNoErr(t, err, "retry cancelled")
		if r.State != fenced.JobQueued {
			t.Fatalf("retried = %+v", r)
		}
	})
}

// runRetryJob: a failed or cancelled job goes back to queued with as many
// attempts again as it had; a job in any other state is refused with the
// state it is in, and nothing changes (docs/design.md §6.6).
func runRetryJob(t *testing.T, b Backend) {
	t.Run("OnlyAFailedOrCancelledJobIsRequeued", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k", MaxAttempts: 1})
		refused := func(state fenced.JobState) {
			t.Helper()
			_, err := e.c.RetryJob(ctx(t), j.ID)
			var se *fenced.JobStateError
			if !errors.Is(err, fenced.ErrJobNotFinished) || !errors.As(err, &se) || se.Op != "retry" || se.ID != j.ID || se.State != state {
				t.Fatalf("retry of a %s job: %v", state, err)
			}
			if got, _ := e.job(t, j.ID); got.State != state {
				t.Fatalf("a refused retry changed the job: %+v", got)
			}
		}
		refused(fenced.JobQueued)
		a := e.claimOne(t, "A", long)
		refused(fenced.JobRunning)
		wantNoErr(t, e.c.FailJob(ctx(t), a.Ref(), "boom", 0, false), "fail")
		r, err := e.c.RetryJob(ctx(t), j.ID)
		wantNoErr(t, err, "retry a failed job")
		if r.State != fenced.JobQueued || r.MaxAttempts != 2 || r.FinishedAt != nil || r.RunAt.After(r.DecidedAt) {
			t.Fatalf("retried = %+v", r)
		}
		a = e.claimOne(t, "A", long)
		if a.ID != j.ID || a.Attempt != 2 || a.Fence != 2 {
			t.Fatalf("claim after the retry = %+v", a)
		}
		wantNoErr(t, e.c.CompleteJob(ctx(t), a.Ref(), nil), "complete")
		refused(fenced.JobSucceeded)
		_, err = e.c.RetryJob(ctx(t), 999999)
		wantErrIs(t, err, fenced.ErrNotFound)
	})
}

// runGetJob: a job that does not exist is not found, for reads and for
// every write naming it.
func runGetJob(t *testing.T, b Backend) {
	t.Run("UnknownJobIsNotFound", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		ghost := fenced.JobRef{ID: 999999, Fence: 1}
		wantErrIs(t, e.c.CompleteJob(ctx(t), ghost, nil), fenced.ErrNotFound)
		_, _, err := e.c.GetJob(ctx(t), ghost.ID)
		wantErrIs(t, err, fenced.ErrNotFound)
		_, err = e.c.CancelJob(ctx(t), ghost.ID)
		wantErrIs(t, err, fenced.ErrNotFound)
		err = e.c.JobTx(ctx(t), ghost, func(fenced.Tx) error { return nil })
		wantErrIs(t, err, fenced.ErrNotFound)
	})
}

// runListJobs: filters, pages, and the counts by queue and state.
func runListJobs(t *testing.T, b Backend) {
	t.Run("ListFiltersAndPages", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for i := range 5 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: []string{"a", "b"}[i%2]})
		}
		e.claim(t, "a", "A", 1, long)
		count := func(f fenced.JobFilter) int {
			t.Helper()
			jobs, err := e.c.ListJobs(ctx(t), f)
			wantNoErr(t, err, "list")
			return len(jobs)
		}
		if n := count(fenced.JobFilter{Queue: "a"}); n != 3 {
			t.Fatalf("queue a has %d", n)
		}
		if n := count(fenced.JobFilter{State: fenced.JobRunning}); n != 1 {
			t.Fatalf("running: %d", n)
		}
		if n := count(fenced.JobFilter{Queue: "b", State: fenced.JobQueued}); n != 2 {
			t.Fatalf("queued in b: %d", n)
		}
		page, err := e.c.ListJobs(ctx(t), fenced.JobFilter{Limit: 2})
		wantNoErr(t, err, "page 1")
		rest, err := e.c.ListJobs(ctx(t), fenced.JobFilter{AfterID: page[1].ID})
		wantNoErr(t, err, "page 2")
		if len(page) != 2 || len(rest) != 3 || rest[0].ID <= page[1].ID {
			t.Fatalf("pages of %d and %d", len(page), len(rest))
		}
		_, err = e.c.ListJobs(ctx(t), fenced.JobFilter{State: "bogus"})
		wantErrIs(t, err, fenced.ErrInvalid)
		counts, err := e.c.CountJobs(ctx(t))
		wantNoErr(t, err, "counts")
		if len(counts) != 3 {
			t.Fatalf("counts = %+v", counts)
		}
	})
}

// runListJobsKeyset: pages newest first with BeforeID, and back with
// AfterID, cover every job once while jobs are enqueued between pages.
func runListJobsKeyset(t *testing.T, b Backend) {
	t.Run("FailingKeepsOnlyJobsWithAnError", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		retrying := e.enqueue(t, fenced.EnqueueParams{Kind: "f", MaxAttempts: 3})
		succeeded := e.enqueue(t, fenced.EnqueueParams{Kind: "f", MaxAttempts: 3})
		untouched := e.enqueue(t, fenced.EnqueueParams{Kind: "f", MaxAttempts: 3})
		dead := e.enqueue(t, fenced.EnqueueParams{Kind: "f", MaxAttempts: 3})
		got := map[int64]*fenced.Job{}
		for _, j := range e.claim(t, fenced.DefaultQueue, "w", 4, time.Minute) {
			got[j.ID] = j
		}
		if len(got) != 4 {
			t.Fatalf("claimed %d jobs, want 4", len(got))
		}
		wantNoErr(t, e.c.FailJob(ctx(t), got[retrying.ID].Ref(), "boom", time.Hour, false), "fail to retry")
		wantNoErr(t, e.c.FailJob(ctx(t), got[dead.ID].Ref(), "fatal", 0, true), "fail for good")
		wantNoErr(t, e.c.CompleteJob(ctx(t), got[succeeded.ID].Ref(), nil), "complete")
		wantNoErr(t, e.c.FailJob(ctx(t), got[untouched.ID].Ref(), "once", 0, false), "fail once")
		again := e.claim(t, fenced.DefaultQueue, "w", 4, time.Minute) // untouched, due at once
		if len(again) != 1 || again[0].ID != untouched.ID {
			t.Fatalf("second claim %v, want job %d", again, untouched.ID)
		}
		wantNoErr(t, e.c.CompleteJob(ctx(t), again[0].Ref(), nil), "complete after a failure")
		ids := func(f fenced.JobFilter) []int64 {
			f.Limit = 10
			page, err := e.c.ListJobs(ctx(t), f)
			wantNoErr(t, err, "list")
			var out []int64
			for _, j := range page {
				out = append(out, j.ID)
			}
			return out
		}
		if got := ids(fenced.JobFilter{State: fenced.JobQueued, Failing: true}); len(got) != 1 || got[0] != retrying.ID {
			t.Fatalf("queued and failing: %v, want only %d (waiting to retry)", got, retrying.ID)
		}
		if got := ids(fenced.JobFilter{Failing: true, Desc: true}); len(got) != 2 || got[0] != dead.ID || got[1] != retrying.ID {
			t.Fatalf("failing: %v, want %d (dead) and %d (retrying)", got, dead.ID, retrying.ID)
		}
		if got := ids(fenced.JobFilter{}); len(got) != 4 {
			t.Fatalf("without the filter: %v, want all 4", got)
		}
	})
	t.Run("DescendingPagesNoGapsNoDuplicates", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		var want []int64
		for range 7 {
			want = append(want, e.enqueue(t, fenced.EnqueueParams{Kind: "k"}).ID)
		}
		e.enqueue(t, fenced.EnqueueParams{Kind: "other"})
		seen := map[int64]bool{}
		var order []int64
		f := fenced.JobFilter{Kind: "k", Desc: true, Limit: 3}
		for pages := 0; ; pages++ {
			page, err := e.c.ListJobs(ctx(t), f)
			wantNoErr(t, err, "page")
			for _, j := range page {
				if seen[j.ID] {
					t.Fatalf("job %d listed twice", j.ID)
				}
				seen[j.ID] = true
				order = append(order, j.ID)
			}
			if len(page) < f.Limit {
				break
			}
			f.BeforeID = page[len(page)-1].ID
			// Newer jobs do not shift the pages still to come.
			e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		}
		if len(order) != len(want) {
			t.Fatalf("listed %v, want the %d first jobs %v", order, len(want), want)
		}
		for i, id := range order {
			if id != want[len(want)-1-i] {
				t.Fatalf("descending order %v, want %v reversed", order, want)
			}
		}
		// The page just newer than a job: ascending from it.
		newer, err := e.c.ListJobs(ctx(t), fenced.JobFilter{Kind: "k", AfterID: want[2], BeforeID: want[6], Limit: 10})
		wantNoErr(t, err, "between")
		if len(newer) != 3 || newer[0].ID != want[3] || newer[2].ID != want[5] {
			t.Fatalf("between %d and %d: %+v", want[2], want[6], newer)
		}
		_, err = e.c.ListJobs(ctx(t), fenced.JobFilter{BeforeID: -1})
		wantErrIs(t, err, fenced.ErrInvalid)
	})
}

// runDeleteJob: a job is deleted in any state with its history; the owner
// of a deleted running job can write nothing more, and the id is not
// reused.
func runDeleteJob(t *testing.T, b Backend) {
	t.Run("DeletedRunningJobsOwnerIsRefused", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		q := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Delay: time.Hour})
		wantNoErr(t, e.c.DeleteJob(ctx(t), q.ID), "delete queued")
		_, _, err := e.c.GetJob(ctx(t), q.ID)
		wantErrIs(t, err, fenced.ErrNotFound)
		wantErrIs(t, e.c.DeleteJob(ctx(t), q.ID), fenced.ErrNotFound)

		e.enqueue(t, fenced.EnqueueParams{Kind: "k", MaxAttempts: 3})
		a := e.claimOne(t, "A", long)
		wantNoErr(t, e.c.FailJob(ctx(t), a.Ref(), "boom", 0, false), "fail")
		a = e.claimOne(t, "A", long)
		if a.Attempt != 2 {
			t.Fatalf("second claim = %+v", a)
		}
		wantNoErr(t, e.c.DeleteJob(ctx(t), a.ID), "delete running")
		wantErrIs(t, e.c.CompleteJob(ctx(t), a.Ref(), "late"), fenced.ErrNotFound)
		_, err = e.c.HeartbeatJob(ctx(t), a.Ref(), long)
		wantErrIs(t, err, fenced.ErrNotFound)
		_, err = e.c.ReportProgress(ctx(t), a.Ref(), fenced.Progress{})
		wantErrIs(t, err, fenced.ErrNotFound)
		wantErrIs(t, e.c.JobTx(ctx(t), a.Ref(), func(fenced.Tx) error { return nil }), fenced.ErrNotFound)

		// The highest id was deleted: the next job gets a new one, so
		// the deleted job's (id, fence) can never name it.
		n := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		if n.ID <= a.ID {
			t.Fatalf("id %d reused after deleting %d", n.ID, a.ID)
		}
		c := e.claimOne(t, "B", long)
		if _, attempts := e.job(t, c.ID); len(attempts) != 1 {
			t.Fatalf("new job's history = %+v", attempts)
		}
		wantErrIs(t, e.c.DeleteJob(ctx(t), 0), fenced.ErrInvalid)
	})
}
