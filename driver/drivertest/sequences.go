package drivertest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runSequences: the jobs of one queue and sequence key run one at a time in
// id order: a job is claimed only when no job of its sequence runs and no
// earlier one is queued, or failed without SequenceContinueOnFailed
// (docs/design.md, "Concurrency limits and sequences").
func runSequences(t *testing.T, b Backend) {
	seq := func(e *env, t *testing.T, key string, n int, p fenced.EnqueueParams) []int64 {
		var ids []int64
		for range n {
			p.Kind, p.SequenceKey = "k", key
			ids = append(ids, e.enqueue(t, p).ID)
		}
		return ids
	}
	t.Run("RunInOrderOneAtATime", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		ids := seq(e, t, "s", 1, fenced.EnqueueParams{Priority: 5})
		ids = append(ids, seq(e, t, "s", 2, fenced.EnqueueParams{Priority: 0})...)
		other := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		for i, want := range ids {
			got := e.claim(t, fenced.DefaultQueue, "A", 10, long)
			wantIDs := []int64{want}
			if i == 0 {
				wantIDs = []int64{other.ID, want} // other has the better priority
			}
			if fmt.Sprint(jobIDs(got)) != fmt.Sprint(wantIDs) {
				t.Fatalf("claim %d took %v, want %v", i, jobIDs(got), wantIDs)
			}
			if more := e.claim(t, fenced.DefaultQueue, "B", 10, long); len(more) != 0 {
				t.Fatalf("claimed %v while job %d of the sequence runs", jobIDs(more), want)
			}
			wantNoErr(t, e.c.CompleteJob(ctx(t), got[len(got)-1].Ref(), nil), "complete")
		}
	})
	t.Run("RetriesKeepOrder", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		ids := seq(e, t, "s", 2, fenced.EnqueueParams{})
		first := e.claimOne(t, "A", long)
		wantNoErr(t, e.c.FailJob(ctx(t), first.Ref(), "boom", 50*time.Millisecond, false), "fail")
		// The first job waits to retry: the second still may not run. (On
		// a loaded machine the delay may have passed already, and the
		// first job's retry is claimed: that is in order.)
		got := e.claim(t, fenced.DefaultQueue, "A", 10, long)
		for _, j := range got {
			if j.ID != ids[0] {
				t.Fatalf("claimed %v while the sequence's first job waits to retry", jobIDs(got))
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for len(got) == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			got = e.claim(t, fenced.DefaultQueue, "A", 10, long)
		}
		if len(got) != 1 || got[0].ID != ids[0] || got[0].Attempt != 2 {
			t.Fatalf("after the retry delay claimed %v, want job %d's second attempt alone", jobIDs(got), ids[0])
		}
		wantNoErr(t, e.c.CompleteJob(ctx(t), got[0].Ref(), nil), "complete")
		if next := e.claimOne(t, "A", long); next.ID != ids[1] {
			t.Fatalf("claimed %d, want %d", next.ID, ids[1])
		}
	})
	t.Run("FailedHeadBlocksUntilRetried", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		ids := seq(e, t, "s", 2, fenced.EnqueueParams{MaxAttempts: 1})
		first := e.claimOne(t, "A", long)
		wantNoErr(t, e.c.FailJob(ctx(t), first.Ref(), "boom", 0, false), "fail")
		if j, _ := e.job(t, ids[0]); j.State != fenced.JobFailed {
			t.Fatalf("first job is %s, want failed", j.State)
		}
		if got := e.claim(t, fenced.DefaultQueue, "A", 10, long); len(got) != 0 {
			t.Fatalf("claimed %v behind a failed head", jobIDs(got))
		}
		_, err := e.c.RetryJob(ctx(t), ids[0])
		wantNoErr(t, err, "retry")
		if got := e.claimOne(t, "A", long); got.ID != ids[0] {
			t.Fatalf("after the retry claimed %d, want the head %d", got.ID, ids[0])
		}
	})
	t.Run("FailedHeadWithContinueDoesNotBlock", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		ids := seq(e, t, "s", 1, fenced.EnqueueParams{MaxAttempts: 1, SequenceContinueOnFailed: true})
		ids = append(ids, seq(e, t, "s", 1, fenced.EnqueueParams{})...)
		first := e.claimOne(t, "A", long)
		if !first.SequenceContinueOnFailed {
			t.Fatalf("claimed %+v without its option", first)
		}
		wantNoErr(t, e.c.FailJob(ctx(t), first.Ref(), "boom", 0, true), "fail")
		if got := e.claimOne(t, "A", long); got.ID != ids[1] {
			t.Fatalf("claimed %d, want %d past its failed head", got.ID, ids[1])
		}
	})
	t.Run("CancelledHeadDoesNotBlock", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		ids := seq(e, t, "s", 3, fenced.EnqueueParams{})
		_, err := e.c.CancelJob(ctx(t), ids[0])
		wantNoErr(t, err, "cancel queued head")
		second := e.claimOne(t, "A", long)
		if second.ID != ids[1] {
			t.Fatalf("claimed %d, want %d past the cancelled head", second.ID, ids[1])
		}
		_, err = e.c.CancelJob(ctx(t), ids[1])
		wantNoErr(t, err, "cancel running")
		wantNoErr(t, e.c.FailJob(ctx(t), second.Ref(), "stopped", 0, false), "end the cancelled attempt")
		if j, _ := e.job(t, ids[1]); j.State != fenced.JobCancelled {
			t.Fatalf("second job is %s, want cancelled", j.State)
		}
		if third := e.claimOne(t, "A", long); third.ID != ids[2] {
			t.Fatalf("claimed %d, want %d", third.ID, ids[2])
		}
	})
	t.Run("SequencesAreIndependent", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := seq(e, t, "a", 2, fenced.EnqueueParams{})
		c := seq(e, t, "c", 2, fenced.EnqueueParams{Queue: "other"})
		bb := seq(e, t, "b", 2, fenced.EnqueueParams{})
		got := e.claim(t, fenced.DefaultQueue, "A", 10, long)
		if fmt.Sprint(jobIDs(got)) != fmt.Sprint([]int64{a[0], bb[0]}) {
			t.Fatalf("claimed %v, want the head of each sequence %v", jobIDs(got), []int64{a[0], bb[0]})
		}
		if got := e.claim(t, "other", "A", 10, long); len(got) != 1 || got[0].ID != c[0] {
			t.Fatalf("claimed %v in other, want %d: the same key in another queue is another sequence", jobIDs(got), c[0])
		}
	})
	t.Run("TwoClaimersNeverRunTwoOfASequence", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		other := e.b.open(t, e.url, fenced.Config{})
		rounds := 30
		if b.Name == "sqlite" {
			rounds = 10
		}
		for r := range rounds {
			queue := fmt.Sprint("seq", r)
			seq(e, t, "s", 4, fenced.EnqueueParams{Queue: queue})
			start := make(chan struct{})
			got := make([]int, 2)
			var wg sync.WaitGroup
			for i, c := range []*fenced.Client{e.c, other} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					jobs, err := c.ClaimJobs(ctx(t), queue, fmt.Sprint("racer", i), 3, long)
					if err != nil {
						t.Errorf("round %d: claim: %v", r, err)
					}
					got[i] = len(jobs)
				}()
			}
			close(start)
			wg.Wait()
			if got[0]+got[1] != 1 {
				t.Fatalf("round %d: racers claimed %v jobs of one sequence, want exactly one in all", r, got)
			}
		}
	})
}

func jobIDs(jobs []*fenced.Job) []int64 {
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}
