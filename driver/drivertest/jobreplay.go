package drivertest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runEndReplays: an end of an attempt that already ended the same way — the
// same kind, with the same output or error message: a worker repeating an
// end whose answer it lost — is answered as the first end was, Replayed,
// and changes nothing; an end of another kind or content stays refused as
// stale, and so does every end of an attempt recovery took back
// (docs/design.md §6.5).
func runEndReplays(t *testing.T, b Backend) {
	t.Run("CompleteTwiceIsReplayedNotStale", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", long)
		first := e.end(t, fenced.JobEnd{Ref: a.Ref(), Kind: fenced.EndComplete, Output: []byte(`{"n":1,"s":"é"}`)})
		if first.Replayed {
			t.Fatal("the first completion was answered replayed")
		}
		// The same value written another way is the same output.
		for _, out := range []string{`{"n":1,"s":"é"}`, `{ "s": "\u00e9", "n": 1.0 }`} {
			e.wantReplayed(t, j.ID, first, fenced.JobEnd{Ref: a.Ref(), Kind: fenced.EndComplete, Output: []byte(out)})
		}
		before, beforeAttempts := e.job(t, j.ID)
		wantNoErr(t, e.c.CompleteJob(ctx(t), a.Ref(), map[string]any{"n": 1, "s": "é"}), "complete again")
		e.wantUnchanged(t, j.ID, before, beforeAttempts)
	})
	t.Run("CompleteWithAnotherOutputIsStale", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", long)
		e.end(t, fenced.JobEnd{Ref: a.Ref(), Kind: fenced.EndComplete, Output: []byte(`{"n":1}`)})
		before, beforeAttempts := e.job(t, j.ID)
		for _, out := range [][]byte{[]byte(`{"n":2}`), []byte(`{"n":1,"m":0}`), []byte(`[1]`), nil} {
			_, err := e.c.EndJob(ctx(t), nil, fenced.JobEnd{Ref: a.Ref(), Kind: fenced.EndComplete, Output: out})
			wantStale(t, err, a.Fence, a.Fence, "", fenced.ReasonNotRunning)
		}
		e.wantUnchanged(t, j.ID, before, beforeAttempts)
	})
	t.Run("FailTwiceIsReplayedAndChangesNothing", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k", MaxAttempts: 3})
		a := e.claimOne(t, "A", long)
		backoff := fenced.Backoff{Base: time.Hour, Max: time.Hour, Jitter: 0.5}
		fail := fenced.JobEnd{Ref: a.Ref(), Kind: fenced.EndFail, Error: "boom é", Backoff: &backoff}
		first := e.end(t, fail)
		// Its backoff would draw another delay, its discard would fail the
		// job for good: the repeat applies neither.
		e.wantReplayed(t, j.ID, first, fail)
		e.wantReplayed(t, j.ID, first, fenced.JobEnd{Ref: a.Ref(), Kind: fenced.EndFail, Error: "boom é", Discard: true})
		if got, attempts := e.job(t, j.ID); got.State != fenced.JobQueued || len(attempts) != 1 || attempts[0].Outcome != "retry" {
			t.Fatalf("after a replayed fail = %+v %+v, want queued for its retry, one attempt", got, attempts)
		}
	})
	t.Run("SnoozeAndCancelTwiceAreReplayed", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		s := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", long)
		snooze := fenced.JobEnd{Ref: a.Ref(), Kind: fenced.EndSnooze, Delay: time.Hour}
		e.wantReplayed(t, s.ID, e.end(t, snooze), snooze)
		c := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a = e.claimOne(t, "A", long)
		if a.ID != c.ID {
			t.Fatalf("claimed job %d, want %d (the other is snoozed)", a.ID, c.ID)
		}
		_, err := e.c.CancelJob(ctx(t), c.ID)
		wantNoErr(t, err, "cancel")
		cancel := fenced.JobEnd{Ref: a.Ref(), Kind: fenced.EndCancel, Error: "stopped"}
		e.wantReplayed(t, c.ID, e.end(t, cancel), cancel)
	})
	t.Run("FailOfAJobAskedToCancelIsReplayed", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", long)
		_, err := e.c.CancelJob(ctx(t), j.ID)
		wantNoErr(t, err, "cancel")
		fail := fenced.JobEnd{Ref: a.Ref(), Kind: fenced.EndFail, Error: "x"}
		first := e.end(t, fail)
		if got, _ := e.job(t, j.ID); got.State != fenced.JobCancelled {
			t.Fatalf("state = %s, want cancelled", got.State)
		}
		e.wantReplayed(t, j.ID, first, fail)
	})
	t.Run("ADifferentEndIsStale", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for _, tc := range []struct {
			name        string
			first, then fenced.JobEnd
		}{
			{"FailAfterComplete", fenced.JobEnd{Kind: fenced.EndComplete}, fenced.JobEnd{Kind: fenced.EndFail, Error: "x"}},
			{"SnoozeAfterComplete", fenced.JobEnd{Kind: fenced.EndComplete}, fenced.JobEnd{Kind: fenced.EndSnooze}},
			{"CompleteAfterFail", fenced.JobEnd{Kind: fenced.EndFail, Error: "x", Delay: time.Hour}, fenced.JobEnd{Kind: fenced.EndComplete}},
			{"FailWithAnotherMessage", fenced.JobEnd{Kind: fenced.EndFail, Error: "x", Delay: time.Hour}, fenced.JobEnd{Kind: fenced.EndFail, Error: "y"}},
			{"SnoozeAfterFail", fenced.JobEnd{Kind: fenced.EndFail, Error: "x", Delay: time.Hour}, fenced.JobEnd{Kind: fenced.EndSnooze}},
			{"CompleteAfterSnooze", fenced.JobEnd{Kind: fenced.EndSnooze, Delay: time.Hour}, fenced.JobEnd{Kind: fenced.EndComplete}},
			{"FailAfterSnooze", fenced.JobEnd{Kind: fenced.EndSnooze, Delay: time.Hour}, fenced.JobEnd{Kind: fenced.EndFail}},
			{"CompleteAfterCancel", fenced.JobEnd{Kind: fenced.EndCancel, Error: "stopped"}, fenced.JobEnd{Kind: fenced.EndComplete}},
			{"SnoozeAfterCancel", fenced.JobEnd{Kind: fenced.EndCancel, Error: "stopped"}, fenced.JobEnd{Kind: fenced.EndSnooze}},
		} {
			j := e.enqueue(t, fenced.EnqueueParams{Kind: "k", MaxAttempts: 3})
			a := e.claimOne(t, "A", long)
			tc.first.Ref, tc.then.Ref = a.Ref(), a.Ref()
			e.end(t, tc.first)
			before, beforeAttempts := e.job(t, j.ID)
			_, err := e.c.EndJob(ctx(t), nil, tc.then)
			var se *fenced.StaleError
			if !errors.As(err, &se) || se.Reason != fenced.ReasonNotRunning {
				t.Fatalf("%s: %v, want stale (not_running)", tc.name, err)
			}
			e.wantUnchanged(t, j.ID, before, beforeAttempts)
		}
	})
	t.Run("AnAttemptRecoveryTookBackIsNeverReplayed", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		// Taken back, not claimed again: the attempt is lost, not ended.
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", 50*time.Millisecond)
		e.recoverExpired(t, j.ID)
		for _, end := range []fenced.JobEnd{
			{Ref: a.Ref(), Kind: fenced.EndFail, Error: "A"},
			{Ref: a.Ref(), Kind: fenced.EndComplete},
		} {
			_, err := e.c.EndJob(ctx(t), nil, end)
			wantStale(t, err, a.Fence, a.Fence, "", fenced.ReasonNotRunning)
		}
		// Taken over and completed by B: A's ends, B's own output
		// included, are stale.
		e = setup(t, b)
		taken, stale, current := e.takenOver(t)
		out := []byte(`"B's"`)
		e.end(t, fenced.JobEnd{Ref: current.Ref(), Kind: fenced.EndComplete, Output: out})
		before, beforeAttempts := e.job(t, taken.ID)
		for _, end := range []fenced.JobEnd{
			{Ref: stale.Ref(), Kind: fenced.EndComplete, Output: out},
			{Ref: stale.Ref(), Kind: fenced.EndFail, Error: "A"},
		} {
			_, err := e.c.EndJob(ctx(t), nil, end)
			wantStale(t, err, stale.Fence, current.Fence, "", fenced.ReasonSuperseded)
		}
		e.wantUnchanged(t, taken.ID, before, beforeAttempts)
	})
	t.Run("ReplayAfterTheJobMovedOnChangesNothing", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k", MaxAttempts: 3})
		a := e.claimOne(t, "A", long)
		fail := fenced.JobEnd{Ref: a.Ref(), Kind: fenced.EndFail, Error: "A failed"}
		first := e.end(t, fail)
		bj := e.claimOne(t, "B", long)
		if bj.ID != j.ID || bj.Fence != a.Fence+1 {
			t.Fatalf("B claimed %+v, want job %d's second attempt", bj, j.ID)
		}
		// A repeats its fail: that attempt did end that way, and B's
		// attempt runs on untouched.
		e.wantReplayed(t, j.ID, first, fail)
		_, err := e.c.EndJob(ctx(t), nil, fenced.JobEnd{Ref: a.Ref(), Kind: fenced.EndComplete})
		wantStale(t, err, a.Fence, bj.Fence, "B", fenced.ReasonSuperseded)
		got, attempts := e.job(t, j.ID)
		if got.State != fenced.JobRunning || got.Fence != bj.Fence || got.Owner != "B" || !got.LeaseExpiresAt.Equal(*bj.LeaseExpiresAt) ||
			len(attempts) != 2 || attempts[0].Outcome != "retry" || attempts[1].Outcome != "running" {
			t.Fatalf("after A's replayed fail B's attempt = %+v, history %+v", got, attempts)
		}
		wantNoErr(t, e.c.CompleteJob(ctx(t), bj.Ref(), "B's"), "B completes")
	})
	t.Run("ReplayInTheCallersTransaction", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", long)
		first := e.end(t, fenced.JobEnd{Ref: a.Ref(), Kind: fenced.EndComplete, Output: []byte(`"done"`)})
		before, beforeAttempts := e.job(t, j.ID)
		l := e.acquire(t, "replay-tx", "A", long)
		var got *fenced.JobEnded
		err := e.c.LeaseTx(ctx(t), *l, func(tx fenced.Tx) error {
			var err error
			got, err = e.c.EndJob(ctx(t), tx, fenced.JobEnd{Ref: a.Ref(), Kind: fenced.EndComplete, Output: []byte(`"done"`)})
			return err
		})
		wantNoErr(t, err, "complete again in a transaction")
		if !got.Replayed || !got.At.Equal(first.At) {
			t.Fatalf("the repeat in a transaction = %+v, want replayed at %v", got, first.At)
		}
		e.wantUnchanged(t, j.ID, before, beforeAttempts)
	})
	t.Run("BatchAnswersEachReplay", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for range 3 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		}
		jobs := e.claim(t, fenced.DefaultQueue, "A", 3, long)
		e.end(t, fenced.JobEnd{Ref: jobs[0].Ref(), Kind: fenced.EndComplete, Output: []byte(`0`)})
		ends := []fenced.JobEnd{
			{Ref: jobs[0].Ref(), Kind: fenced.EndComplete, Output: []byte(`0`)},                                   // a replay
			{Ref: jobs[1].Ref(), Kind: fenced.EndComplete, Output: []byte(`1`)},                                   // written
			{Ref: jobs[1].Ref(), Kind: fenced.EndComplete, Output: []byte(`1`)},                                   // its repeat
			{Ref: fenced.JobRef{ID: jobs[2].ID, Fence: jobs[2].Fence + 1}, Kind: fenced.EndComplete, Output: nil}, // forged
		}
		errs, at, err := e.c.EndJobs(ctx(t), nil, ends)
		wantNoErr(t, err, "end jobs")
		if errs[0] != nil || errs[1] != nil || errs[2] != nil || !errors.Is(errs[3], fenced.ErrStale) {
			t.Fatalf("errs = %v, want three answered and the forged one stale", errs)
		}
		got, _ := e.job(t, jobs[1].ID)
		if got.State != fenced.JobSucceeded || compactJSON(t, got.Output) != `1` || !got.FinishedAt.Equal(at) {
			t.Fatalf("job %d = %+v, want succeeded at the batch's reading %v", got.ID, got, at)
		}
	})
}

// end ends an attempt that must hold and returns its answer.
func (e *env) end(t *testing.T, end fenced.JobEnd) *fenced.JobEnded {
	t.Helper()
	got, err := e.c.EndJob(ctx(t), nil, end)
	wantNoErr(t, err, string(end.Kind))
	return got
}

// wantReplayed ends again an attempt of job id whose first end was
// answered first: the answer must be that one, replayed, and the job and
// its history must not change.
func (e *env) wantReplayed(t *testing.T, id int64, first *fenced.JobEnded, end fenced.JobEnd) {
	t.Helper()
	before, beforeAttempts := e.job(t, id)
	got, err := e.c.EndJob(ctx(t), nil, end)
	if err != nil {
		t.Fatalf("a repeated %s (error %q, output %s): %v, want it replayed", end.Kind, end.Error, end.Output, err)
	}
	if !got.Replayed || !got.At.Equal(first.At) {
		t.Fatalf("a repeated %s = %+v, want replayed at the first end's %v", end.Kind, got, first.At)
	}
	e.wantUnchanged(t, id, before, beforeAttempts)
}

// wantUnchanged checks that job id and its history are as read before.
func (e *env) wantUnchanged(t *testing.T, id int64, before *fenced.Job, beforeAttempts []fenced.JobAttempt) {
	t.Helper()
	after, afterAttempts := e.job(t, id)
	after.DecidedAt = before.DecidedAt // the reads' own clock readings
	if !reflect.DeepEqual(before, after) || !reflect.DeepEqual(beforeAttempts, afterAttempts) {
		t.Fatalf("job %d changed:\n%+v\n%+v\nhistory:\n%+v\n%+v", id, before, after, beforeAttempts, afterAttempts)
	}
}
