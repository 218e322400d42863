package drivertest

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

func (e *env) enqueue(t *testing.T, p fenced.EnqueueParams) *fenced.Job {
	t.Helper()
	j, _, err := e.c.Enqueue(ctx(t), p)
	wantNoErr(t, err, "enqueue")
	return j
}

func (e *env) claim(t *testing.T, queue, owner string, limit int, ttl time.Duration) []*fenced.Job {
	t.Helper()
	jobs, err := e.c.ClaimJobs(ctx(t), queue, owner, limit, ttl)
	wantNoErr(t, err, "claim")
	return jobs
}

func (e *env) claimOne(t *testing.T, owner string, ttl time.Duration) *fenced.Job {
	t.Helper()
	jobs := e.claim(t, fenced.DefaultQueue, owner, 1, ttl)
	if len(jobs) != 1 {
		t.Fatalf("claimed %d jobs, want 1", len(jobs))
	}
	return jobs[0]
}

func (e *env) job(t *testing.T, id int64) (*fenced.Job, []fenced.JobAttempt) {
	t.Helper()
	j, attempts, err := e.c.GetJob(ctx(t), id)
	wantNoErr(t, err, "get job")
	return j, attempts
}

// takenOver enqueues a job that A claims, loses (its lease runs out and
// recovery takes the job back) and B claims again: the job, A's stale
// attempt and B's current one.
func (e *env) takenOver(t *testing.T) (j, stale, current *fenced.Job) {
	t.Helper()
	j = e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
	stale = e.claimOne(t, "A", 50*time.Millisecond)
	e.recoverExpired(t, j.ID)
	return j, stale, e.claimOne(t, "B", long)
}

// recoverExpired runs recovery until the job's expired attempt was taken
// back (its lease must have run out by the database clock first).
func (e *env) recoverExpired(t *testing.T, id int64) *fenced.Job {
	t.Helper()
	return e.recoverWith(t, id, fenced.Backoff{Base: time.Microsecond, Max: time.Microsecond})
}

// jobStateMachine walks one job through enqueue, claim, complete and the
// writes its finished state refuses (docs/design.md §6.1).
func jobStateMachine(t *testing.T, b Backend) {
	e := setup(t, b)
	j := e.enqueue(t, fenced.EnqueueParams{Kind: "email", Args: map[string]string{"to": "a@example.com"}})
	if j.State != fenced.JobQueued || j.Attempt != 0 || j.Fence != 0 || string(j.Args) != `{"to": "a@example.com"}` && string(j.Args) != `{"to":"a@example.com"}` {
		t.Fatalf("enqueued = %+v args %s", j, j.Args)
	}
	c := e.claimOne(t, "A", long)
	if c.ID != j.ID || c.State != fenced.JobRunning || c.Attempt != 1 || c.Fence != 1 || c.Owner != "A" || c.LeaseExpiresAt == nil {
		t.Fatalf("claimed = %+v", c)
	}
	if again := e.claim(t, fenced.DefaultQueue, "B", 10, long); len(again) != 0 {
		t.Fatalf("second claim got %d jobs", len(again))
	}
	wantNoErr(t, e.c.CompleteJob(ctx(t), c.Ref(), map[string]int{"sent": 1}), "complete")
	err := e.c.CompleteJob(ctx(t), c.Ref(), nil)
	wantStale(t, err, 1, 1, "", fenced.ReasonNotRunning)
	_, err = e.c.CancelJob(ctx(t), j.ID)
	wantErrIs(t, err, fenced.ErrJobFinished)
	got, attempts := e.job(t, j.ID)
	if got.State != fenced.JobSucceeded || got.Attempt != 1 || got.FinishedAt == nil || len(got.Output) == 0 {
		t.Fatalf("final = %+v", got)
	}
	if len(attempts) != 1 || attempts[0].Outcome != "succeeded" || attempts[0].Fence != 1 || attempts[0].Owner != "A" || attempts[0].EndedAt == nil {
		t.Fatalf("history = %+v", attempts)
	}
}

// runStaleWorker: A claims (fence f), its lease expires, recovery runs, B
// claims (fence f+1). Every write of A's is refused as stale, its business
// writes roll back, B completes, and the history shows both attempts.
func runStaleWorker(t *testing.T, b Backend) {
	e := setup(t, b)
	b.Exec(t, e.url, bizDDL)
	j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
	a := e.claimOne(t, "A", 50*time.Millisecond)
	got := e.recoverExpired(t, j.ID)
	if got.State != fenced.JobQueued {
		t.Fatalf("after recovery state = %s", got.State)
	}
	bj := e.claimOne(t, "B", long)
	if bj.Fence != a.Fence+1 || bj.Attempt != 2 {
		t.Fatalf("B's claim = fence %d attempt %d", bj.Fence, bj.Attempt)
	}
	stale := func(what string, err error) {
		t.Helper()
		var se *fenced.StaleError
		if !errors.As(err, &se) || se.Fence != a.Fence || se.CurrentFence != bj.Fence || se.CurrentOwner != "B" || se.Reason != fenced.ReasonSuperseded {
			t.Fatalf("%s: want stale (fence %d, current %d held by B), got %v", what, a.Fence, bj.Fence, err)
		}
	}
	stale("complete", e.c.CompleteJob(ctx(t), a.Ref(), nil))
	stale("fail", e.c.FailJob(ctx(t), a.Ref(), "boom", 0, false))
	stale("snooze", e.c.SnoozeJob(ctx(t), a.Ref(), time.Second))
	stale("progress", errAt(e.c.ReportProgress(ctx(t), a.Ref(), fenced.Progress{Stage: "half"})))
	hb, err := e.c.HeartbeatJobs(ctx(t), []fenced.JobRef{a.Ref()}, long)
	wantNoErr(t, err, "heartbeat")
	if len(hb.Lost) != 1 || len(hb.Extended) != 0 {
		t.Fatalf("A's heartbeat = %+v, want lost", hb)
	}
	called := false
	err = e.c.JobTx(ctx(t), a.Ref(), func(tx fenced.Tx) error {
		called = true
		return e.insertBiz(tx, "A", 1)
	})
	stale("job tx", err)
	if called {
		t.Fatal("A's job tx body ran")
	}
	// A completes inside its own business transaction (not a JobTx): the
	// completion is refused and the caller's writes roll back with it.
	l := e.acquire(t, "a-own-tx", "A", long)
	err = e.c.LeaseTx(ctx(t), *l, func(tx fenced.Tx) error {
		if err := e.insertBiz(tx, "A-own", 5); err != nil {
			return err
		}
		return e.c.CompleteJobTx(ctx(t), tx, a.Ref(), "done by A")
	})
	stale("complete in the caller's transaction", err)
	// B completes in its own transaction, with its business write.
	err = e.c.JobTx(ctx(t), bj.Ref(), func(tx fenced.Tx) error {
		if err := e.insertBiz(tx, "B", 2); err != nil {
			return err
		}
		return e.c.CompleteJobTx(ctx(t), tx, bj.Ref(), "done by B")
	})
	wantNoErr(t, err, "B completes")
	final, attempts := e.job(t, j.ID)
	if final.State != fenced.JobSucceeded || string(final.Output) != `"done by B"` {
		t.Fatalf("final = %+v output %s", final, final.Output)
	}
	if len(attempts) != 2 || attempts[0].Outcome != "lost" || attempts[0].Owner != "A" || attempts[0].Fence != a.Fence ||
		attempts[1].Outcome != "succeeded" || attempts[1].Owner != "B" || attempts[1].Fence != bj.Fence {
		t.Fatalf("history = %+v", attempts)
	}
	rows := e.bizRows(t, fenced.Lease{Name: "stale-worker"})
	if len(rows) != 1 || rows["B"] != 2 {
		t.Fatalf("business rows = %v, want only B's", rows)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func newRand() *rand.Rand { return rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1)) }
