package drivertest

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runJobBackoff: a failure given a backoff (JobEnd.Backoff, FailJob's
// RetryBackoff) retries after the backoff of its attempt, computed by the
// database from the job's attempt number as it records the failure:
// min(Max, Base·2^(attempt−1)) scaled by a factor in [1−Jitter, 1], never
// more than Max whatever the attempt. A stale failure with a backoff is
// refused and writes nothing.
func runJobBackoff(t *testing.T, b Backend) {
	backoff := fenced.Backoff{Base: time.Hour, Max: fenced.MaxRetryDelay, Jitter: 0.5}
	t.Run("DelayIsTheAttemptsBackoff", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for _, attempt := range []int{1, 2, 3, 70} {
			j, a := e.claimAttempt(t, attempt)
			ended, err := e.c.EndJob(ctx(t), nil, fenced.JobEnd{Ref: a.Ref(), Kind: fenced.EndFail, Error: "x",
				Delay: time.Minute, Backoff: &backoff}) // Delay is ignored
			wantNoErr(t, err, "fail")
			got, _ := e.job(t, j.ID)
			wantBackoff(t, got, ended.At, backoff, attempt)
		}
	})
	t.Run("BatchMixesBackoffsAndDelays", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for range 3 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		}
		jobs := e.claim(t, fenced.DefaultQueue, "A", 3, long)
		errs, _, err := e.c.EndJobs(ctx(t), nil, []fenced.JobEnd{
			{Ref: jobs[0].Ref(), Kind: fenced.EndFail, Error: "x", Delay: 7 * time.Minute},
			{Ref: jobs[1].Ref(), Kind: fenced.EndFail, Error: "x", Backoff: &backoff},
			{Ref: jobs[2].Ref(), Kind: fenced.EndSnooze, Delay: 3 * time.Minute},
		})
		wantNoErr(t, err, "end jobs")
		for i, err := range errs {
			wantNoErr(t, err, "end")
			got, attempts := e.job(t, jobs[i].ID)
			at := *attempts[0].EndedAt
			switch i {
			case 1:
				wantBackoff(t, got, at, backoff, 1)
			default:
				if want := []time.Duration{7 * time.Minute, 0, 3 * time.Minute}[i]; got.RunAt.Sub(at) != want {
					t.Fatalf("end %d runs again %s after its end, want %s", i, got.RunAt.Sub(at), want)
				}
			}
		}
	})
	t.Run("FailJobRetryBackoffIsTheDefault", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		j, a := e.claimAttempt(t, 2)
		wantNoErr(t, e.c.FailJob(ctx(t), a.Ref(), "x", fenced.RetryBackoff, false), "fail")
		got, attempts := e.job(t, j.ID)
		wantBackoff(t, got, *attempts[len(attempts)-1].EndedAt, fenced.DefaultBackoff, 2)
		err := e.c.FailJob(ctx(t), a.Ref(), "x", -2, false)
		var inv *fenced.InvalidError
		if !errors.As(err, &inv) || inv.Field != "delay" {
			t.Fatalf("a negative retry delay other than RetryBackoff: %v, want invalid delay", err)
		}
		c := e.claimOne(t, "A", long)
		_, err = e.c.EndJob(ctx(t), nil, fenced.JobEnd{Ref: c.Ref(), Kind: fenced.EndSnooze, Backoff: &backoff})
		if !errors.As(err, &inv) || inv.Field != "backoff" {
			t.Fatalf("a snooze with a backoff: %v, want invalid backoff", err)
		}
	})
	t.Run("StaleFailWithBackoffWritesNothing", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j, a, bj := e.takenOver(t)
		before, beforeAttempts := e.job(t, j.ID)
		ended, err := e.c.EndJob(ctx(t), nil, fenced.JobEnd{Ref: a.Ref(), Kind: fenced.EndFail, Error: "A", Backoff: &backoff})
		wantStale(t, err, a.Fence, bj.Fence, "B", fenced.ReasonSuperseded)
		err = e.c.FailJob(ctx(t), a.Ref(), "A", fenced.RetryBackoff, false)
		wantStale(t, err, a.Fence, bj.Fence, "B", fenced.ReasonSuperseded)
		after, afterAttempts := e.job(t, j.ID)
		after.DecidedAt = before.DecidedAt // the reads' own clock readings
		if ended != nil || !reflect.DeepEqual(before, after) || !reflect.DeepEqual(beforeAttempts, afterAttempts) {
			t.Fatalf("A's stale failure changed the job (answered %+v):\n%+v\n%+v", ended, before, after)
		}
	})
}

// claimAttempt enqueues a job in a queue of its own (one per attempt
// number) and claims it until its running attempt is the attempt-th,
// snoozing the ones before (which puts it back at once).
func (e *env) claimAttempt(t *testing.T, attempt int) (*fenced.Job, *fenced.Job) {
	t.Helper()
	queue := fmt.Sprintf("attempt-%d", attempt)
	// Each snooze adds one to MaxAttempts: one attempt is always left.
	j := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Queue: queue, MaxAttempts: 2})
	for {
		jobs := e.claim(t, queue, "A", 1, long)
		if len(jobs) != 1 {
			t.Fatalf("claimed %d jobs of queue %s, want 1", len(jobs), queue)
		}
		if jobs[0].Attempt == attempt {
			return j, jobs[0]
		}
		wantNoErr(t, e.c.SnoozeJob(ctx(t), jobs[0].Ref(), 0), "snooze")
	}
}

// wantBackoff checks that j, failed at at in its attempt-th attempt, runs
// again after that attempt's backoff b: between (1−Jitter) and 1 times
// min(Max, Base·2^(attempt−1)).
func wantBackoff(t *testing.T, j *fenced.Job, at time.Time, b fenced.Backoff, attempt int) {
	t.Helper()
	if j.State != fenced.JobQueued || j.Attempt != attempt {
		t.Fatalf("after the failure of attempt %d: %+v", attempt, j)
	}
	ceiling := backoffCeiling(b.Base, b.Max, attempt)
	floor := time.Duration(float64(ceiling) * (1 - b.Jitter)).Truncate(time.Microsecond)
	if got := j.RunAt.Sub(at); got < floor || got > ceiling {
		t.Fatalf("attempt %d retries %s after its failure, want %s to %s", attempt, got, floor, ceiling)
	}
}
