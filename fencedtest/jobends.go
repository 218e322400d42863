package fencedtest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/fenced/fenced"
)

func runJobEnds(t *testing.T, b Backend) {
	t.Run("FailRetriesThenDeadLetters", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k", MaxAttempts: 2})
		a := e.claimOne(t, "A", long)
		wantNoErr(t, e.c.FailJob(ctx(t), a.Ref(), "first", 0, false), "fail 1")
		got, _ := e.job(t, j.ID)
		if got.State != fenced.JobQueued || got.LastError != "first" || got.FinishedAt != nil {
			t.Fatalf("after a retryable failure = %+v", got)
		}
		a = e.claimOne(t, "A", long)
		wantNoErr(t, e.c.FailJob(ctx(t), a.Ref(), "second", 0, false), "fail 2")
		got, attempts := e.job(t, j.ID)
		if got.State != fenced.JobFailed || got.Attempt != 2 || got.FinishedAt == nil || got.LastError != "second" {
			t.Fatalf("after exhausting attempts = %+v", got)
		}
		if len(attempts) != 2 || attempts[0].Outcome != "retry" || attempts[1].Outcome != "failed" || attempts[1].Error != "second" {
			t.Fatalf("history = %+v", attempts)
		}
		r, err := e.c.RetryJob(ctx(t), j.ID)
		wantNoErr(t, err, "retry")
		if r.State != fenced.JobQueued || r.MaxAttempts != 4 {
			t.Fatalf("retried = %+v", r)
		}
		_, err = e.c.RetryJob(ctx(t), j.ID)
		wantErrIs(t, err, fenced.ErrJobNotFinished)
	})
	t.Run("FailWaitsForTheRetryDelay", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", long)
		wantNoErr(t, e.c.FailJob(ctx(t), a.Ref(), "later", time.Hour, false), "fail")
		if jobs := e.claim(t, fenced.DefaultQueue, "A", 1, long); len(jobs) != 0 {
			t.Fatal("claimed a job before its retry delay")
		}
	})
	t.Run("AnyErrorMessageIsKept", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k", MaxAttempts: 1})
		a := e.claimOne(t, "A", long)
		msg := "nul\x00 bad\xff " + strings.Repeat("é", fenced.MaxErrorBytes)
		wantNoErr(t, e.c.FailJob(ctx(t), a.Ref(), msg, 0, false), "fail with a long, odd message")
		got, _ := e.job(t, j.ID)
		if got.State != fenced.JobFailed || !utf8.ValidString(got.LastError) || !strings.HasPrefix(got.LastError, "nul bad\uFFFD é") {
			t.Fatalf("stored error starts %q", got.LastError[:20])
		}
	})
	t.Run("DiscardFailsAtOnce", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k", MaxAttempts: 5})
		a := e.claimOne(t, "A", long)
		wantNoErr(t, e.c.FailJob(ctx(t), a.Ref(), "hopeless", 0, true), "discard")
		if got, _ := e.job(t, j.ID); got.State != fenced.JobFailed {
			t.Fatalf("state = %s", got.State)
		}
	})
	t.Run("SnoozeDoesNotCountTheAttempt", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k", MaxAttempts: 1})
		a := e.claimOne(t, "A", long)
		wantNoErr(t, e.c.SnoozeJob(ctx(t), a.Ref(), 0), "snooze")
		got, attempts := e.job(t, j.ID)
		if got.State != fenced.JobQueued || got.MaxAttempts != 2 || len(attempts) != 1 || attempts[0].Outcome != "snoozed" {
			t.Fatalf("after snooze = %+v %+v", got, attempts)
		}
		a = e.claimOne(t, "A", long)
		wantNoErr(t, e.c.FailJob(ctx(t), a.Ref(), "x", 0, false), "fail")
		if got, _ := e.job(t, j.ID); got.State != fenced.JobFailed {
			t.Fatalf("state = %s, want failed after its one counted attempt", got.State)
		}
	})
	t.Run("ProgressIsStored", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", long)
		p := fenced.Progress{Stage: "copy", Counters: map[string]int64{"rows": 42}}
		wantNoErr(t, errAt(e.c.ReportProgress(ctx(t), a.Ref(), p)), "progress")
		if got, _ := e.job(t, j.ID); string(got.Progress) == "" || !strings.Contains(string(got.Progress), `"rows"`) {
			t.Fatalf("progress = %s", got.Progress)
		}
	})
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
	t.Run("BatchEndGuardsEachJobByItsOwnFence", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for range 3 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		}
		jobs := e.claim(t, fenced.DefaultQueue, "A", 3, long)
		ends := []fenced.JobEnd{
			{Ref: jobs[0].Ref(), Kind: fenced.EndComplete},
			{Ref: fenced.JobRef{ID: jobs[1].ID, Fence: jobs[1].Fence + 1}, Kind: fenced.EndComplete}, // forged
			{Ref: jobs[2].Ref(), Kind: fenced.EndFail, Error: "x"},
		}
		errs, _, err := e.c.EndJobs(ctx(t), nil, ends)
		wantNoErr(t, err, "end jobs")
		if errs[0] != nil || errs[2] != nil || !errors.Is(errs[1], fenced.ErrStale) {
			t.Fatalf("errs = %v", errs)
		}
		if got, _ := e.job(t, jobs[1].ID); got.State != fenced.JobRunning {
			t.Fatalf("forged end changed job: %+v", got)
		}
	})
	t.Run("OverlappingBatchWritesDoNotDeadlock", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for range 3 {
			overlappingBatchWrites(t, e, 200)
		}
	})
}

// overlappingBatchWrites claims n jobs, heartbeats them from two callers in
// opposite orders at once, then ends them in a shuffled order while a third
// heartbeat names them in reverse: each job's row is locked by statements
// that wait for one another, and none may fail (PostgreSQL aborts one
// statement of a deadlock).
func overlappingBatchWrites(t *testing.T, e *env, n int) {
	t.Helper()
	ps := make([]fenced.EnqueueParams, n)
	for i := range ps {
		ps[i] = fenced.EnqueueParams{Kind: "k"}
	}
	_, err := e.c.EnqueueMany(ctx(t), nil, ps)
	wantNoErr(t, err, "enqueue")
	jobs := e.claim(t, fenced.DefaultQueue, "A", n, long)
	up, down := make([]fenced.JobRef, n), make([]fenced.JobRef, n)
	ends := make([]fenced.JobEnd, n)
	for i, j := range jobs {
		up[i], down[n-1-i] = j.Ref(), j.Ref()
		ends[i] = fenced.JobEnd{Ref: j.Ref(), Kind: fenced.EndComplete}
	}
	slices.SortFunc(up, func(a, b fenced.JobRef) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(down, func(a, b fenced.JobRef) int { return cmp.Compare(b.ID, a.ID) })
	newRand().Shuffle(n, func(a, b int) { ends[a], ends[b] = ends[b], ends[a] })
	var wg sync.WaitGroup
	var hbErrs [3]error
	var endErrs []error
	var endErr error
	wg.Go(func() { _, hbErrs[0] = e.c.HeartbeatJobs(ctx(t), up, long) })
	wg.Go(func() { _, hbErrs[1] = e.c.HeartbeatJobs(ctx(t), down, long) })
	wg.Wait()
	wg.Go(func() { _, hbErrs[2] = e.c.HeartbeatJobs(ctx(t), down, long) })
	wg.Go(func() { endErrs, _, endErr = e.c.EndJobs(ctx(t), nil, ends) })
	wg.Wait()
	for i, err := range hbErrs {
		wantNoErr(t, err, fmt.Sprintf("heartbeat %d", i))
	}
	wantNoErr(t, endErr, "end jobs")
	for i, err := range endErrs {
		wantNoErr(t, err, fmt.Sprintf("end job %d", ends[i].Ref.ID))
	}
}

// A job asked to cancel ends cancelled even when its worker fails or snoozes
// it instead of acknowledging the cancel: the request is never lost.
func runCancelNeverLost(t *testing.T, b Backend) {
	for _, kind := range []fenced.JobEnd{{Kind: fenced.EndFail, Error: "x"}, {Kind: fenced.EndSnooze}} {
		t.Run(string(kind.Kind), func(t *testing.T) {
			t.Parallel()
			e := setup(t, b)
			e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
			a := e.claimOne(t, "A", long)
			_, err := e.c.CancelJob(ctx(t), a.ID)
			wantNoErr(t, err, "cancel")
			kind.Ref = a.Ref()
			errs, _, err := e.c.EndJobs(ctx(t), nil, []fenced.JobEnd{kind})
			if err != nil || errs[0] != nil {
				t.Fatalf("end: %v %v", err, errs)
			}
			got, attempts := e.job(t, a.ID)
			if got.State != fenced.JobCancelled || attempts[0].Outcome != "cancelled" {
				t.Fatalf("after %s = %+v %+v", kind.Kind, got, attempts)
			}
		})
	}
}
