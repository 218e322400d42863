package drivertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/fenced/fenced"
)

// runEndJobs: the final write of an attempt — complete, fail (retry or dead
// letter), snooze, cancel — each guarded by its own fence, in batches or in
// the caller's transaction, judged at the write (docs/design.md §6.5).
func runEndJobs(t *testing.T, b Backend) {
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
	t.Run("BatchOfCompletionsGuardsEachJobAndKeepsEachOutput", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		// A backend may end a batch of completions by a statement of its
		// own, and may first try it without reading the jobs: every job is
		// still guarded by its own fence, a stale owner back after a
		// takeover still loses, and each output lands on its own job.
		taken, stale, current := e.takenOver(t)
		for range 7 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		}
		jobs := e.claim(t, fenced.DefaultQueue, "A", 7, long)
		wantEnded := func(ends []fenced.JobEnd, at time.Time, outputs ...string) {
			t.Helper()
			for i, want := range outputs {
				got, _ := e.job(t, ends[i].Ref.ID)
				if got.State != fenced.JobSucceeded || compactJSON(t, got.Output) != want || got.FinishedAt == nil || got.FinishedAt.After(at) {
					t.Fatalf("job %d after its completion = %+v output %s, want succeeded by %v with %q", got.ID, got, got.Output, at, want)
				}
			}
		}
		// Every completion current.
		ends := []fenced.JobEnd{
			{Ref: jobs[0].Ref(), Kind: fenced.EndComplete, Output: []byte(`{"n": 0}`)},
			{Ref: jobs[1].Ref(), Kind: fenced.EndComplete},
		}
		errs, at, err := e.c.EndJobs(ctx(t), nil, ends)
		wantNoErr(t, err, "end jobs")
		if errs[0] != nil || errs[1] != nil || at.IsZero() {
			t.Fatalf("errs = %v at %v", errs, at)
		}
		wantEnded(ends, at, `{"n":0}`, "")
		// A stale one, a forged one and a second completion of a job
		// already ended among them.
		ends = []fenced.JobEnd{
			{Ref: jobs[2].Ref(), Kind: fenced.EndComplete, Output: []byte(`"two"`)},
			{Ref: jobs[4].Ref(), Kind: fenced.EndComplete, Output: []byte(`[4]`)},
			{Ref: stale.Ref(), Kind: fenced.EndComplete, Output: []byte(`"A's"`)},
			{Ref: fenced.JobRef{ID: jobs[3].ID, Fence: jobs[3].Fence + 1}, Kind: fenced.EndComplete, Output: []byte(`"forged"`)},
			{Ref: jobs[0].Ref(), Kind: fenced.EndComplete, Output: []byte(`"again"`)},
		}
		errs, at, err = e.c.EndJobs(ctx(t), nil, ends)
		wantNoErr(t, err, "end jobs")
		if errs[0] != nil || errs[1] != nil || !errors.Is(errs[3], fenced.ErrStale) || at.IsZero() {
			t.Fatalf("errs = %v at %v", errs, at)
		}
		wantStale(t, errs[2], stale.Fence, current.Fence, "B", fenced.ReasonSuperseded)
		wantStale(t, errs[4], jobs[0].Fence, jobs[0].Fence, "", fenced.ReasonNotRunning)
		wantEnded(ends, at, `"two"`, `[4]`)
		if got, _ := e.job(t, jobs[0].ID); compactJSON(t, got.Output) != `{"n":0}` {
			t.Fatalf("a second completion changed job %d's output to %s", got.ID, got.Output)
		}
		if got, _ := e.job(t, jobs[3].ID); got.State != fenced.JobRunning || len(got.Output) != 0 {
			t.Fatalf("forged completion changed job %d: %+v", got.ID, got)
		}
		if got, _ := e.job(t, taken.ID); got.State != fenced.JobRunning || got.Owner != "B" || len(got.Output) != 0 {
			t.Fatalf("A's stale completion changed B's job: %+v", got)
		}
		// Two completions of each of two attempts in one batch: one of each
		// pair is written, the other refused, and the job keeps the output
		// of the one written.
		ends = []fenced.JobEnd{
			{Ref: jobs[5].Ref(), Kind: fenced.EndComplete, Output: []byte(`"5a"`)},
			{Ref: jobs[6].Ref(), Kind: fenced.EndComplete, Output: []byte(`"6a"`)},
			{Ref: jobs[5].Ref(), Kind: fenced.EndComplete, Output: []byte(`"5b"`)},
			{Ref: jobs[6].Ref(), Kind: fenced.EndComplete, Output: []byte(`"6b"`)},
		}
		errs, at, err = e.c.EndJobs(ctx(t), nil, ends)
		wantNoErr(t, err, "end jobs")
		for k, pair := range [][2]int{{0, 2}, {1, 3}} {
			won, lost := pair[0], pair[1]
			if errs[won] != nil {
				won, lost = lost, won
			}
			if errs[won] != nil || !errors.Is(errs[lost], fenced.ErrStale) {
				t.Fatalf("two completions of job %d: errs %v, %v; want one written, one refused", jobs[5+k].ID, errs[pair[0]], errs[pair[1]])
			}
			wantEnded(ends[won:won+1], at, compactJSON(t, ends[won].Output))
		}
	})
	t.Run("CancelNeverLost", func(t *testing.T) { t.Parallel(); runCancelNeverLost(t, b) })
	t.Run("Replay", func(t *testing.T) { t.Parallel(); runEndReplays(t, b) })
	t.Run("CompleteInALongerTransactionJudgesTheLeaseAtTheWrite", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		other := e.b.open(t, e.url, fenced.Config{})
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", 500*time.Millisecond)
		l := e.acquire(t, "own-tx", "A", long)
		// The caller's transaction begins while the attempt's lease is
		// valid; by the time it completes the job the lease has run out.
		// Expiry is the database clock at the write, not at the start of
		// the transaction (docs/design.md §3: clock_timestamp(), not now()).
		err := e.c.LeaseTx(ctx(t), *l, func(tx fenced.Tx) error {
			deadline := time.Now().Add(10 * time.Second)
			for {
				now, err := other.DatabaseTime(ctx(t))
				if err != nil {
					return err
				}
				if now.After(a.LeaseExpiresAt.Add(200 * time.Millisecond)) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("database clock never passed the attempt's lease")
				}
				time.Sleep(20 * time.Millisecond)
			}
			return e.c.CompleteJobTx(ctx(t), tx, a.Ref(), "late")
		})
		wantStale(t, err, a.Fence, a.Fence, "", fenced.ReasonExpired)
		if cur, _ := e.job(t, j.ID); cur.State != fenced.JobRunning || len(cur.Output) != 0 {
			t.Fatalf("a completion after the lease ran out changed the job: %+v", cur)
		}
	})
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

// compactJSON is a stored JSON value without insignificant spaces (a
// backend may store it normalized); "" for none.
func compactJSON(t *testing.T, v []byte) string {
	t.Helper()
	if len(v) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		t.Fatalf("stored JSON %q: %v", v, err)
	}
	return b.String()
}
