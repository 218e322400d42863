package drivertest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runJobClock: the worker-owned writes return the database clock reading
// they were recorded at, so a caller that reports it (the HTTP service)
// needs no read of its own: an end's is its attempt's ended_at and the base
// of a retry's or snooze's run_at; a stale write's *StaleError carries the
// reading of the read that diagnosed it, and writes nothing.
func runJobClock(t *testing.T, b Backend) {
	t.Run("EndIsRecordedAtTheReadingItReturns", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		done := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", long)
		ended, err := e.c.EndJob(ctx(t), nil, fenced.JobEnd{Ref: a.Ref(), Kind: fenced.EndComplete, Output: []byte(`{"n": 1}`)})
		wantNoErr(t, err, "complete")
		at := ended.At
		got, attempts := e.job(t, done.ID)
		if ended.Replayed || at.IsZero() || len(attempts) != 1 || !attempts[0].EndedAt.Equal(at) || !got.FinishedAt.Equal(at) {
			t.Fatalf("complete returned %v; the attempt ended at %v, the job finished at %v", at, attempts[0].EndedAt, got.FinishedAt)
		}
		for _, end := range []fenced.JobEnd{
			{Kind: fenced.EndFail, Error: "x", Delay: 90 * time.Minute},
			{Kind: fenced.EndSnooze, Delay: 45 * time.Minute},
		} {
			j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
			c := e.claimOne(t, "A", long)
			end.Ref = c.Ref()
			ended, err := e.c.EndJob(ctx(t), nil, end)
			wantNoErr(t, err, string(end.Kind))
			at := ended.At
			got, attempts := e.job(t, j.ID)
			if ended.Replayed || at.IsZero() || !attempts[0].EndedAt.Equal(at) || got.RunAt.Sub(at) != end.Delay {
				t.Fatalf("%s returned %v; the attempt ended at %v, runs again at %v (want %s later)",
					end.Kind, at, attempts[0].EndedAt, got.RunAt, end.Delay)
			}
		}
	})
	t.Run("BatchReturnsTheLatestReadingItRecordedAnEndAt", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for range 3 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		}
		jobs := e.claim(t, fenced.DefaultQueue, "A", 3, long)
		errs, at, err := e.c.EndJobs(ctx(t), nil, []fenced.JobEnd{
			{Ref: jobs[0].Ref(), Kind: fenced.EndComplete},
			{Ref: fenced.JobRef{ID: jobs[1].ID, Fence: jobs[1].Fence + 1}, Kind: fenced.EndComplete}, // forged
			{Ref: jobs[2].Ref(), Kind: fenced.EndFail, Error: "x"},
		})
		wantNoErr(t, err, "end jobs")
		if errs[0] != nil || errs[2] != nil || !errors.Is(errs[1], fenced.ErrStale) {
			t.Fatalf("errs = %v", errs)
		}
		var latest time.Time
		for _, i := range []int{0, 2} {
			_, attempts := e.job(t, jobs[i].ID)
			if attempts[0].EndedAt.After(latest) {
				latest = *attempts[0].EndedAt
			}
		}
		if !at.Equal(latest) {
			t.Fatalf("batch returned %v, the latest end was recorded at %v", at, latest)
		}
		errs, at, err = e.c.EndJobs(ctx(t), nil, []fenced.JobEnd{{Ref: jobs[0].Ref(), Kind: fenced.EndComplete, Output: []byte(`"other"`)}})
		if err != nil || !errors.Is(errs[0], fenced.ErrStale) || !at.IsZero() {
			t.Fatalf("a batch that wrote nothing = %v %v at %v, want stale at no time", err, errs, at)
		}
		// A repeat of jobs[0]'s completion is answered as it was, and
		// writes nothing either.
		errs, at, err = e.c.EndJobs(ctx(t), nil, []fenced.JobEnd{{Ref: jobs[0].Ref(), Kind: fenced.EndComplete}})
		if err != nil || errs[0] != nil || !at.IsZero() {
			t.Fatalf("a batch that replayed an end = %v %v at %v, want no error at no time", err, errs, at)
		}
	})
	t.Run("StaleEndAfterATakeoverCarriesItsDiagnosisReading", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j, a, bj := e.takenOver(t)
		before, beforeAttempts := e.job(t, j.ID)
		for _, end := range []fenced.JobEnd{
			{Ref: a.Ref(), Kind: fenced.EndComplete, Output: []byte(`"A's"`)},
			{Ref: a.Ref(), Kind: fenced.EndFail, Error: "A", Discard: true},
			{Ref: a.Ref(), Kind: fenced.EndSnooze, Delay: time.Hour},
		} {
			ended, err := e.c.EndJob(ctx(t), nil, end)
			wantStale(t, err, a.Fence, bj.Fence, "B", fenced.ReasonSuperseded)
			var se *fenced.StaleError
			errors.As(err, &se)
			if ended != nil || se.DecidedAt.Before(bj.DecidedAt) {
				t.Fatalf("A's stale %s returned %+v, diagnosed at %v (B claimed at %v)", end.Kind, ended, se.DecidedAt, bj.DecidedAt)
			}
		}
		at, err := e.c.ReportProgress(ctx(t), a.Ref(), fenced.Progress{Stage: "A"})
		wantStale(t, err, a.Fence, bj.Fence, "B", fenced.ReasonSuperseded)
		if !at.IsZero() {
			t.Fatalf("A's stale progress returned %v", at)
		}
		after, afterAttempts := e.job(t, j.ID)
		after.DecidedAt = before.DecidedAt // the reads' own clock readings
		if !reflect.DeepEqual(before, after) || !reflect.DeepEqual(beforeAttempts, afterAttempts) {
			t.Fatalf("A's stale writes changed the job:\n%+v\n%+v", before, after)
		}
	})
	t.Run("ProgressReturnsTheReadingItWasStoredAt", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", long)
		at, err := e.c.ReportProgress(ctx(t), a.Ref(), fenced.Progress{Stage: "half"})
		wantNoErr(t, err, "progress")
		later, _ := e.job(t, j.ID)
		if at.Before(a.DecidedAt) || at.After(later.DecidedAt) {
			t.Fatalf("progress stored at %v: not between the claim (%v) and a read after it (%v)", at, a.DecidedAt, later.DecidedAt)
		}
	})
}
