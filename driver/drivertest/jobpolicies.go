package drivertest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// startWorker starts a worker whose handlers register is given to set up,
// and stops it when the test ends.
func (e *env) startWorker(t *testing.T, cfg fenced.WorkerConfig, register func(w *fenced.Worker)) *fenced.Worker {
	t.Helper()
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 20 * time.Millisecond
	}
	w, err := e.c.NewWorker(cfg)
	wantNoErr(t, err, "new worker")
	register(w)
	wantNoErr(t, w.Start(context.Background()), "start worker")
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Stop(c)
	})
	return w
}

// handleWith registers h for kind with o, failing the test on an error.
func handleWith(t *testing.T, w *fenced.Worker, kind string, h fenced.Handler, o fenced.KindOptions) {
	t.Helper()
	wantNoErr(t, w.HandleWith(kind, h, o), "handle "+kind)
}

// runJobPolicies: a job's own timeout and retry backoff are stored with it
// by every enqueue path and read back by every read and the claim; a
// timeout ends the handler's context (cause ErrJobTimeout), fails the
// attempt with an error saying so and retries it, while the lease is
// renewed until the attempt ends; a handler that ignores its timeout is
// abandoned after the grace and its later writes are refused; a custom
// retry policy's delay is what the failure's statement adds to the
// database's now; a kind's MaxAttempts dead-letters at the lower of the
// job's and the kind's; a job's own policies override its kind's
// (docs/design.md §6.15).
func runJobPolicies(t *testing.T, b Backend) {
	t.Run("StoredByEveryEnqueueAndReadBack", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		retry := fenced.Backoff{Base: 2 * time.Second, Max: time.Minute, Jitter: 0.25}
		p := fenced.EnqueueParams{Kind: "k", Timeout: 90 * time.Second, Retry: &retry}
		one := e.enqueue(t, p)
		wantPolicies(t, "Enqueue's answer", one, 90*time.Second, &retry)
		many, err := e.c.EnqueueMany(ctx(t), nil, []fenced.EnqueueParams{p, {Kind: "k"}, {Kind: "k", Timeout: time.Millisecond}})
		wantNoErr(t, err, "enqueue many")
		wantPolicies(t, "batch job 1", many[0].Job, 90*time.Second, &retry)
		wantPolicies(t, "batch job 2", many[1].Job, 0, nil)
		wantPolicies(t, "batch job 3", many[2].Job, time.Millisecond, nil)
		// A bulk batch copied in (PostgreSQL), and one inserted.
		_, err = e.c.EnqueueBulk(ctx(t), nil, []fenced.EnqueueParams{{Kind: "k", Retry: &fenced.Backoff{}}, {Kind: "k"}})
		wantNoErr(t, err, "enqueue bulk")
		_, err = e.c.EnqueueBulk(ctx(t), nil, []fenced.EnqueueParams{{Kind: "k", Timeout: time.Hour, Delay: time.Millisecond}})
		wantNoErr(t, err, "enqueue bulk with a delay")
		def := fenced.DefaultBackoff
		type want struct {
			timeout time.Duration
			retry   *fenced.Backoff
		}
		wants := []want{{90 * time.Second, &retry}, {90 * time.Second, &retry}, {}, {time.Millisecond, nil}, {0, &def}, {}, {time.Hour, nil}}
		jobs, err := e.c.ListJobs(ctx(t), fenced.JobFilter{})
		wantNoErr(t, err, "list")
		if len(jobs) != len(wants) {
			t.Fatalf("%d jobs, want %d", len(jobs), len(wants))
		}
		for i, j := range jobs {
			wantPolicies(t, "listed job", j, wants[i].timeout, wants[i].retry)
			got, _ := e.job(t, j.ID)
			wantPolicies(t, "GetJob", got, wants[i].timeout, wants[i].retry)
		}
		time.Sleep(5 * time.Millisecond) // the delayed job's millisecond
		for _, j := range e.claim(t, fenced.DefaultQueue, "w", 100, long) {
			w := wants[j.ID-jobs[0].ID]
			wantPolicies(t, "claimed job", j, w.timeout, w.retry)
		}
		for name, p := range map[string]fenced.EnqueueParams{
			"a negative timeout":  {Kind: "k", Timeout: -time.Second},
			"a timeout under 1ms": {Kind: "k", Timeout: time.Microsecond},
			"a timeout too long":  {Kind: "k", Timeout: fenced.MaxJobTimeout + 1},
		} {
			_, _, err := e.c.Enqueue(ctx(t), p)
			var inv *fenced.InvalidError
			if !errors.As(err, &inv) || inv.Field != "timeout" {
				t.Errorf("%s: %v, want an *InvalidError of timeout", name, err)
			}
		}
	})
	t.Run("TimeoutFiresAndTheAttemptIsRetried", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		var causes sync.Map // attempt → the cause of its context's end
		e.startWorker(t, fenced.WorkerConfig{Backoff: fastRetry}, func(w *fenced.Worker) {
			handleWith(t, w, "slow", func(ctx context.Context, j *fenced.JobRun) error {
				if j.Attempt > 1 {
					return nil
				}
				<-ctx.Done()
				causes.Store(j.Attempt, context.Cause(ctx))
				return nil // returning nil after the deadline does not complete the job
			}, fenced.KindOptions{Timeout: 200 * time.Millisecond})
		})
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "slow"})
		e.waitState(t, j.ID, fenced.JobSucceeded)
		_, attempts := e.job(t, j.ID)
		if len(attempts) != 2 || attempts[0].Outcome != fenced.OutcomeRetry || attempts[1].Outcome != fenced.OutcomeSucceeded {
			t.Fatalf("attempts %+v, want a retry then a success", attempts)
		}
		if want := "job timed out after 200ms"; attempts[0].Error != want {
			t.Fatalf("the timed-out attempt's error is %q, want %q", attempts[0].Error, want)
		}
		if c, _ := causes.Load(1); c != fenced.ErrJobTimeout {
			t.Fatalf("the handler's context ended with cause %v, want ErrJobTimeout", c)
		}
	})
	t.Run("CustomRetryPolicyDelayIsAddedToTheDatabaseNow", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		var seen atomic.Value
		policy := fenced.RetryFunc(func(j *fenced.Job, err error) time.Duration {
			seen.Store(j.Attempt)
			if err == nil || err.Error() != "boom" {
				return time.Minute
			}
			return time.Duration(j.Attempt) * 37 * time.Minute
		})
		e.startWorker(t, fenced.WorkerConfig{}, func(w *fenced.Worker) {
			handleWith(t, w, "fails", func(context.Context, *fenced.JobRun) error { return errors.New("boom") },
				fenced.KindOptions{Retry: policy})
		})
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "fails"})
		got := e.waitAttempts(t, j.ID, 1)
		_, attempts := e.job(t, j.ID)
		if got.State != fenced.JobQueued || attempts[0].Outcome != fenced.OutcomeRetry {
			t.Fatalf("job %s, attempt %+v, want queued after a retry", got.State, attempts[0])
		}
		if d := got.RunAt.Sub(*attempts[0].EndedAt); d != 37*time.Minute {
			t.Fatalf("runs again %s after the failure by the database clock, want the policy's 37m", d)
		}
		if a, _ := seen.Load().(int); a != 1 {
			t.Fatalf("the policy saw attempt %d, want 1", a)
		}
	})
	t.Run("KindMaxAttemptsDeadLettersAtTheLower", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.startWorker(t, fenced.WorkerConfig{Backoff: fastRetry}, func(w *fenced.Worker) {
			handleWith(t, w, "fails", func(context.Context, *fenced.JobRun) error { return errors.New("boom") },
				fenced.KindOptions{MaxAttempts: 2})
		})
		kindLower := e.enqueue(t, fenced.EnqueueParams{Kind: "fails", MaxAttempts: 20})
		jobLower := e.enqueue(t, fenced.EnqueueParams{Kind: "fails", MaxAttempts: 1})
		for id, want := range map[int64]int{kindLower.ID: 2, jobLower.ID: 1} {
			j := e.waitState(t, id, fenced.JobFailed)
			_, attempts := e.job(t, id)
			if j.Attempt != want || len(attempts) != want || attempts[want-1].Outcome != fenced.OutcomeFailed {
				t.Fatalf("job %d dead-lettered after %d attempts (%+v), want %d", id, j.Attempt, attempts, want)
			}
		}
	})
	t.Run("JobPoliciesOverrideTheKinds", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		slowRetry := fenced.RetryFunc(func(*fenced.Job, error) time.Duration { return time.Hour })
		e.startWorker(t, fenced.WorkerConfig{}, func(w *fenced.Worker) {
			handleWith(t, w, "slow", func(ctx context.Context, j *fenced.JobRun) error {
				if j.Attempt > 1 {
					return nil
				}
				<-ctx.Done()
				return ctx.Err()
			}, fenced.KindOptions{Timeout: time.Hour, Retry: slowRetry})
		})
		// The kind's timeout and retry would hold the job an hour each;
		// the job's own end the attempt at 150ms and retry it at once.
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "slow", Timeout: 150 * time.Millisecond,
			Retry: &fenced.Backoff{Base: time.Millisecond, Max: time.Millisecond, Jitter: -1}})
		e.waitState(t, j.ID, fenced.JobSucceeded)
		_, attempts := e.job(t, j.ID)
		if len(attempts) != 2 || !strings.HasPrefix(attempts[0].Error, "job timed out after 150ms") {
			t.Fatalf("attempts %+v, want one timed out after the job's 150ms, then a success", attempts)
		}
	})
	t.Run("LongTimeoutShortLeaseIsNotRecovered", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		ttl := time.Second
		e.startWorker(t, fenced.WorkerConfig{LeaseTTL: ttl}, func(w *fenced.Worker) {
			handleWith(t, w, "long", func(ctx context.Context, j *fenced.JobRun) error {
				select {
				case <-time.After(4 * ttl): // several leases long
					return nil
				case <-ctx.Done():
					return context.Cause(ctx)
				}
			}, fenced.KindOptions{Timeout: time.Hour})
		})
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "long"})
		stop := make(chan struct{})
		recovered := make(chan int, 1)
		go func() { // recovery runs all along: an expired lease would be taken back
			n := 0
			defer func() { recovered <- n }()
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				r, err := e.c.RecoverJobs(context.Background(), nil, 1000, fenced.Backoff{Base: time.Microsecond, Max: time.Microsecond})
				if err == nil {
					n += r
				}
			}
		}()
		e.waitState(t, j.ID, fenced.JobSucceeded)
		close(stop)
		if n := <-recovered; n != 0 {
			t.Fatalf("recovery took back %d attempts of a job running within its timeout", n)
		}
		if _, attempts := e.job(t, j.ID); len(attempts) != 1 {
			t.Fatalf("attempts %+v, want one", attempts)
		}
	})
	t.Run("HandlerIgnoringItsTimeoutIsAbandoned", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		release := make(chan struct{})
		staleWrite := make(chan error, 1)
		e.startWorker(t, fenced.WorkerConfig{Backoff: fastRetry, TimeoutGrace: 100 * time.Millisecond}, func(w *fenced.Worker) {
			handleWith(t, w, "stuck", func(ctx context.Context, j *fenced.JobRun) error {
				if j.Attempt > 1 {
					return nil
				}
				<-release // ignores its context
				staleWrite <- j.Progress(context.Background(), fenced.Progress{Stage: "late"})
				return nil
			}, fenced.KindOptions{Timeout: 150 * time.Millisecond})
		})
		defer close(release)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "stuck"})
		// The stuck attempt is ended by the worker and the job retried
		// while its handler still runs.
		e.waitState(t, j.ID, fenced.JobSucceeded)
		_, attempts := e.job(t, j.ID)
		if len(attempts) != 2 || attempts[0].Outcome != fenced.OutcomeRetry ||
			!strings.Contains(attempts[0].Error, "job timed out after 150ms") || !strings.Contains(attempts[0].Error, "abandoned") {
			t.Fatalf("attempts %+v, want the stuck one abandoned and retried, then a success", attempts)
		}
		release <- struct{}{}
		if err := <-staleWrite; !errors.Is(err, fenced.ErrStale) {
			t.Fatalf("the abandoned handler's late write: %v, want it refused as stale", err)
		}
	})
}

// waitAttempts polls until job id has ended n attempts (none running).
func (e *env) waitAttempts(t *testing.T, id int64, n int) *fenced.Job {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		j, attempts := e.job(t, id)
		if len(attempts) >= n && attempts[n-1].EndedAt != nil {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d has %d attempts, want %d ended", id, len(attempts), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// wantPolicies fails unless j has the timeout and retry backoff given.
func wantPolicies(t *testing.T, what string, j *fenced.Job, timeout time.Duration, retry *fenced.Backoff) {
	t.Helper()
	if j.Timeout != timeout {
		t.Fatalf("%s: job %d has timeout %s, want %s", what, j.ID, j.Timeout, timeout)
	}
	switch {
	case retry == nil && j.Retry != nil:
		t.Fatalf("%s: job %d has retry %+v, want none", what, j.ID, *j.Retry)
	case retry != nil && (j.Retry == nil || *j.Retry != retry.WithDefaults()):
		t.Fatalf("%s: job %d has retry %v, want %+v", what, j.ID, j.Retry, retry.WithDefaults())
	}
}
