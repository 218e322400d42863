package drivertest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
)

// runPauseQueue: a paused queue is not claimed from. The check is in the
// claim statement (plain, by kind, and the limited claim of keys and
// global limits): a claim of a paused queue returns nothing and touches no
// job, while other queues are claimed as before. Running attempts keep
// their fences; enqueue still works; pausing twice keeps the first pause;
// no claim that starts after PauseQueue returned takes a job; a Worker
// waits its poll interval on a paused queue instead of claiming again.
func runPauseQueue(t *testing.T, b Backend) {
	t.Run("PausedQueueYieldsNoJobs", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		var paused, open []int64
		for i := range 3 {
			paused = append(paused, e.enqueue(t, fenced.EnqueueParams{Kind: []string{"A", "B", "A"}[i], Queue: "paused"}).ID)
			open = append(open, e.enqueue(t, fenced.EnqueueParams{Kind: "A", Queue: "open"}).ID)
		}
		e.pause(t, "paused")
		for _, kinds := range [][]string{nil, {"A"}, {"A", "B"}} {
			jobs, err := e.c.ClaimJobs(ctx(t), "paused", "W", 10, long, kinds...)
			wantNoErr(t, err, "claim of a paused queue")
			if len(jobs) != 0 {
				t.Fatalf("a claim of kinds %q of a paused queue took %v", kinds, ids(jobs))
			}
		}
		for _, id := range paused {
			if j, attempts := e.job(t, id); j.State != fenced.JobQueued || j.Fence != 0 || len(attempts) != 0 {
				t.Fatalf("job %d of the paused queue was touched by a claim: %+v", id, j)
			}
		}
		wantIDs(t, "claim of another queue", e.claim(t, "open", "W", 10, long), open)
	})
	t.Run("LimitedClaimYieldsNoJobs", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		// A keyed queue's claims go the limited way (and a backend may
		// remember that): one claim before the pause, none after.
		for i := range 3 {
			e.enqueue(t, fenced.EnqueueParams{Kind: "A", Queue: "keyed", ConcurrencyKey: "k"})
			e.enqueue(t, fenced.EnqueueParams{Kind: "A", Queue: "seq", SequenceKey: fmt.Sprint("s", i)})
			e.enqueue(t, fenced.EnqueueParams{Kind: "A", Queue: "global"})
		}
		e.setLimit(t, fenced.JobLimit{Queue: "global", Global: 10})
		for _, q := range []string{"keyed", "seq", "global"} {
			if got := e.claim(t, q, "W", 1, long); len(got) != 1 {
				t.Fatalf("claim of %s before the pause took %d jobs, want 1", q, len(got))
			}
			e.pause(t, q)
			for _, kinds := range [][]string{nil, {"A"}, {"A", "B"}} {
				jobs, err := e.c.ClaimJobs(ctx(t), q, "W", 10, long, kinds...)
				wantNoErr(t, err, "limited claim of a paused queue")
				if len(jobs) != 0 {
					t.Fatalf("a limited claim of kinds %q of paused %s took %v", kinds, q, ids(jobs))
				}
			}
		}
	})
	t.Run("RunningJobsKeepTheirFences", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.enqueue(t, fenced.EnqueueParams{Kind: "A"})
		r := e.enqueue(t, fenced.EnqueueParams{Kind: "A"})
		running := e.claim(t, fenced.DefaultQueue, "W", 2, long)
		if len(running) != 2 {
			t.Fatalf("claimed %d jobs, want 2", len(running))
		}
		e.pause(t, fenced.DefaultQueue)
		hb, err := e.c.HeartbeatJobs(ctx(t), []fenced.JobRef{running[0].Ref(), running[1].Ref()}, long)
		wantNoErr(t, err, "heartbeat while paused")
		if len(hb.Extended) != 2 || len(hb.Lost) != 0 {
			t.Fatalf("heartbeat while paused: %+v, want both extended", hb)
		}
		for _, j := range running {
			if j.ID == a.ID {
				wantNoErr(t, e.c.CompleteJob(ctx(t), j.Ref(), "done"), "complete while paused")
			} else {
				wantNoErr(t, e.c.FailJob(ctx(t), j.Ref(), "again", time.Microsecond, false), "fail while paused")
			}
		}
		if j, _ := e.job(t, a.ID); j.State != fenced.JobSucceeded || j.Fence != 1 {
			t.Fatalf("completed while paused: %+v", j)
		}
		// The failed attempt's job is queued again, and not claimed while paused.
		e.waitDue(t, r.ID)
		if got := e.claim(t, fenced.DefaultQueue, "W", 10, long); len(got) != 0 {
			t.Fatalf("a retried job of a paused queue was claimed: %v", ids(got))
		}
		e.resume(t, fenced.DefaultQueue, true)
		wantIDs(t, "claim after resume", e.claim(t, fenced.DefaultQueue, "W", 10, long), []int64{r.ID})
	})
	t.Run("EnqueueWhilePausedThenResume", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.pause(t, "q")
		var want []int64
		for range 3 {
			j := e.enqueue(t, fenced.EnqueueParams{Kind: "A", Queue: "q"})
			if j.State != fenced.JobQueued {
				t.Fatalf("enqueued into a paused queue: %+v", j)
			}
			want = append(want, j.ID)
		}
		if got := e.claim(t, "q", "W", 10, long); len(got) != 0 {
			t.Fatalf("claimed %v from a paused queue", ids(got))
		}
		e.resume(t, "q", true)
		wantIDs(t, "claim after resume", e.claim(t, "q", "W", 10, long), want)
	})
	t.Run("PauseIsIdempotent", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		first := e.pause(t, "q")
		if first.Queue != "q" || first.PausedAt.IsZero() {
			t.Fatalf("pause = %+v", first)
		}
		again, stored, err := e.c.PauseQueue(ctx(t), "q")
		wantNoErr(t, err, "pause again")
		if stored || *again != *first {
			t.Fatalf("pausing again = %+v, stored %v; want the first pause %+v, not stored", again, stored, first)
		}
		e.wantPauses(t, "q")
		e.enqueue(t, fenced.EnqueueParams{Kind: "A", Queue: "q"})
		if got := e.claim(t, "q", "W", 10, long); len(got) != 0 {
			t.Fatalf("claimed %v from a queue paused twice", ids(got))
		}
	})
	t.Run("ConcurrentPausesStoreOne", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for round := range 5 {
			queue := fmt.Sprint("q", round)
			var wg sync.WaitGroup
			var stored atomic.Int64
			pauses := make([]*fenced.QueuePause, 4)
			for i := range pauses {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p, s, err := e.c.PauseQueue(ctx(t), queue)
					if err != nil {
						t.Error(err)
						return
					}
					pauses[i] = p
					if s {
						stored.Add(1)
					}
				}()
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			if stored.Load() != 1 {
				t.Fatalf("round %d: %d of 4 concurrent pauses stored one, want exactly 1", round, stored.Load())
			}
			for _, p := range pauses {
				if *p != *pauses[0] {
					t.Fatalf("round %d: concurrent pauses returned %+v and %+v", round, p, pauses[0])
				}
			}
		}
	})
	t.Run("NoClaimStartedAfterThePauseTakesAJob", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		var in []fenced.EnqueueParams
		for range 300 {
			in = append(in, fenced.EnqueueParams{Kind: "A", Queue: "race"})
		}
		_, err := e.c.EnqueueMany(ctx(t), nil, in)
		wantNoErr(t, err, "enqueue")
		var paused atomic.Bool // set once PauseQueue returned
		var claimed atomic.Int64
		var wg sync.WaitGroup
		stop := make(chan struct{})
		errs := make(chan error, 3)
		for w := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					after := paused.Load()
					jobs, err := e.c.ClaimJobs(context.Background(), "race", fmt.Sprint("W", w), 1, long)
					if err == nil && after && len(jobs) > 0 {
						err = fmt.Errorf("a claim that started after PauseQueue returned took job %d", jobs[0].ID)
					}
					if err != nil {
						errs <- err
						return
					}
					claimed.Add(int64(len(jobs)))
				}
			}()
		}
		deadline := time.Now().Add(10 * time.Second)
		for claimed.Load() < 20 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		e.pause(t, "race")
		paused.Store(true)
		before := claimed.Load()
		time.Sleep(200 * time.Millisecond) // claims keep starting, none may take a job
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if before == 0 || before >= 300 {
			t.Fatalf("%d jobs claimed before the pause: the race did not happen", before)
		}
		// A claim under way when the pause committed may still have taken
		// a job after it; none started later did (checked above).
		if n := claimed.Load(); n > before+3 {
			t.Fatalf("%d jobs claimed after the pause, at most the 3 claims under way may", n-before)
		}
		e.resume(t, "race", true)
		if got := e.claim(t, "race", "W", 1000, long); int64(len(got)) != 300-claimed.Load() {
			t.Fatalf("after resume claimed %d jobs, want the %d left", len(got), 300-claimed.Load())
		}
	})
	t.Run("WorkerWaitsOnAPausedQueue", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		// A Client over a driver that counts the claims it runs; its
		// Worker polls once an hour, so only a wake-up claims again.
		cd := &claimCounter{jobDriver: e.d.(jobDriver)}
		c := fenced.New(cd, fenced.Config{})
		_, _, err := c.PauseQueue(ctx(t), fenced.DefaultQueue)
		wantNoErr(t, err, "pause")
		var ran atomic.Int64
		w, err := c.NewWorker(fenced.WorkerConfig{PollInterval: time.Hour})
		wantNoErr(t, err, "new worker")
		w.Handle("A", func(context.Context, *fenced.JobRun) error { ran.Add(1); return nil })
		wantNoErr(t, w.Start(context.Background()), "start worker")
		defer stopWorker(t, w)
		j, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "A"}) // wakes the worker: it claims nothing
		wantNoErr(t, err, "enqueue")
		time.Sleep(300 * time.Millisecond)
		if n := cd.claims.Load(); n > 3 || ran.Load() != 0 {
			t.Fatalf("on a paused queue the worker claimed %d times and ran %d jobs; want at most 3 claims (start, wake-up) and none run", n, ran.Load())
		}
		resumed, err := c.ResumeQueue(ctx(t), fenced.DefaultQueue)
		wantNoErr(t, err, "resume")
		if !resumed {
			t.Fatal("resume of a paused queue reported it was not paused")
		}
		start := time.Now()
		e.waitState(t, j.ID, fenced.JobSucceeded)
		if waited := time.Since(start); waited > 10*time.Second {
			t.Fatalf("the job ran %v after resume: the resume did not wake the worker", waited)
		}
	})
}

// jobDriver is a backend with the job queue: what a wrapper that keeps the
// queue embeds (a wrapper has the capabilities it embeds, and no other).
type jobDriver interface {
	driver.Driver
	driver.JobDriver
}

// claimCounter counts the claims run through it.
type claimCounter struct {
	jobDriver
	claims atomic.Int64
}

func (c *claimCounter) ClaimJobs(ctx context.Context, p driver.ClaimJobsParams) ([]*fenced.Job, error) {
	c.claims.Add(1)
	return c.jobDriver.ClaimJobs(ctx, p)
}

// runResumeQueue: resume makes a paused queue's jobs claimable again and
// reports whether the queue was paused; resuming a queue that is not
// paused changes nothing. Queue names are validated.
func runResumeQueue(t *testing.T, b Backend) {
	t.Run("ReportsWhetherPaused", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.resume(t, "q", false)
		e.pause(t, "q")
		e.resume(t, "q", true)
		e.resume(t, "q", false)
		e.wantPauses(t)
	})
	t.Run("ResumedJobsAreClaimed", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "A", Queue: "q", ConcurrencyKey: "k"})
		e.pause(t, "q")
		if got := e.claim(t, "q", "W", 10, long); len(got) != 0 {
			t.Fatalf("claimed %v while paused", ids(got))
		}
		e.resume(t, "q", true)
		wantIDs(t, "claim after resume", e.claim(t, "q", "W", 10, long), []int64{j.ID})
	})
	t.Run("ValidatesTheQueue", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for _, q := range []string{"", "-bad", "a b", string(make([]byte, 101))} {
			_, _, err := e.c.PauseQueue(ctx(t), q)
			wantInvalid(t, "pause "+q, err)
			_, err = e.c.ResumeQueue(ctx(t), q)
			wantInvalid(t, "resume "+q, err)
		}
		e.wantPauses(t)
	})
}

// runListQueuePauses: the paused queues by name, each with the time of its
// first pause; a resumed queue is not listed.
func runListQueuePauses(t *testing.T, b Backend) {
	e := setup(t, b)
	e.wantPauses(t)
	b2 := e.pause(t, "b")
	a := e.pause(t, "a")
	e.pause(t, "c")
	got := e.wantPauses(t, "a", "b", "c")
	if got[0] != *a || got[1] != *b2 {
		t.Fatalf("listed %+v, want the pauses as returned: %+v, %+v", got, a, b2)
	}
	e.resume(t, "b", true)
	e.wantPauses(t, "a", "c")
}

// pause pauses queue, which must not be paused yet.
func (e *env) pause(t *testing.T, queue string) *fenced.QueuePause {
	t.Helper()
	p, stored, err := e.c.PauseQueue(ctx(t), queue)
	wantNoErr(t, err, "pause queue")
	if p.Queue != queue || !stored {
		t.Fatalf("pause of %q = %+v, stored %v; want it stored", queue, p, stored)
	}
	return p
}

func (e *env) resume(t *testing.T, queue string, wasPaused bool) {
	t.Helper()
	got, err := e.c.ResumeQueue(ctx(t), queue)
	wantNoErr(t, err, "resume queue")
	if got != wasPaused {
		t.Fatalf("resume of %q reported paused %v, want %v", queue, got, wasPaused)
	}
}

// wantPauses checks the paused queues are exactly queues, in order.
func (e *env) wantPauses(t *testing.T, queues ...string) []fenced.QueuePause {
	t.Helper()
	got, err := e.c.ListQueuePauses(ctx(t))
	wantNoErr(t, err, "list queue pauses")
	names := make([]string, len(got))
	for i, p := range got {
		names[i] = p.Queue
		if p.PausedAt.IsZero() {
			t.Fatalf("pause %+v has no time", p)
		}
	}
	if fmt.Sprint(names) != fmt.Sprint(queues) {
		t.Fatalf("paused queues = %q, want %q", names, queues)
	}
	return got
}

// waitDue polls until job id is queued and due by the database clock.
func (e *env) waitDue(t *testing.T, id int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		j, _ := e.job(t, id)
		if j.State == fenced.JobQueued && !j.RunAt.After(j.DecidedAt) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d is %s, run_at %v: not due", id, j.State, j.RunAt)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
