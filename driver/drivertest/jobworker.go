package drivertest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
)

// newWorker starts a worker with handlers and stops it when the test ends.
func (e *env) newWorker(t *testing.T, cfg fenced.WorkerConfig, handlers map[string]fenced.Handler) *fenced.Worker {
	t.Helper()
	w, err := e.c.NewWorker(cfg)
	wantNoErr(t, err, "new worker")
	for k, h := range handlers {
		w.Handle(k, h)
	}
	wantNoErr(t, w.Start(context.Background()), "start worker")
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Stop(c)
	})
	return w
}

// waitState polls until job id is in state.
func (e *env) waitState(t *testing.T, id int64, state fenced.JobState) *fenced.Job {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		j, _ := e.job(t, id)
		if j.State == state {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d is %s, want %s (last error %q)", id, j.State, state, j.LastError)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var fastRetry = fenced.Backoff{Base: time.Millisecond, Max: 5 * time.Millisecond}

func runWorker(t *testing.T, b Backend) {
	t.Run("RunsHandlersAndStoresOutput", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		type args struct{ N int }
		double := func(ctx context.Context, j *fenced.JobRun, a args) error {
			j.SetOutput(a.N * 2)
			return nil
		}
		e.newWorker(t, fenced.WorkerConfig{PollInterval: 20 * time.Millisecond, Backoff: fastRetry}, map[string]fenced.Handler{
			"double": fenced.HandleArgs(double),
			"strict": fenced.HandleArgs(double, fenced.StrictArgs()),
		})
		var ids []int64
		for i := range 20 {
			ids = append(ids, e.enqueue(t, fenced.EnqueueParams{Kind: "double", Args: args{N: i}}).ID)
		}
		// A field the handler's type does not declare is ignored, unless
		// the handler decodes strictly.
		extra := map[string]any{"N": 4, "currency": "EUR"}
		lenient := e.enqueue(t, fenced.EnqueueParams{Kind: "double", Args: extra})
		strict := e.enqueue(t, fenced.EnqueueParams{Kind: "strict", Args: extra, MaxAttempts: 2})
		// Args that do not decode fail the attempt, which is retried.
		mistyped := e.enqueue(t, fenced.EnqueueParams{Kind: "double", Args: map[string]any{"N": "four"}, MaxAttempts: 2})
		for _, id := range ids {
			if j := e.waitState(t, id, fenced.JobSucceeded); len(j.Output) == 0 {
				t.Fatalf("job %d has no output", id)
			}
		}
		if j := e.waitState(t, lenient.ID, fenced.JobSucceeded); string(j.Output) != "8" {
			t.Fatalf("args with an extra field: output %s, want 8", j.Output)
		}
		for _, c := range []struct {
			id   int64
			want string
		}{{strict.ID, `decode args of strict job: json: unknown field "currency"`}, {mistyped.ID, "decode args of double job: json: cannot unmarshal"}} {
			j := e.waitState(t, c.id, fenced.JobFailed)
			if j.Attempt != 2 || !contains(j.LastError, c.want) {
				t.Fatalf("job %d failed after %d attempts with %q; want 2 attempts (retried) and %q", c.id, j.Attempt, j.LastError, c.want)
			}
		}
	})
	t.Run("PanicIsARecordedFailure", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		w := e.newWorker(t, fenced.WorkerConfig{PollInterval: 20 * time.Millisecond, Backoff: fastRetry}, map[string]fenced.Handler{
			"boom": func(ctx context.Context, j *fenced.JobRun) error { panic("kaboom") },
			"ok":   func(ctx context.Context, j *fenced.JobRun) error { return nil },
		})
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "boom", MaxAttempts: 2})
		got := e.waitState(t, j.ID, fenced.JobFailed)
		if !contains(got.LastError, "panic: kaboom") {
			t.Fatalf("last error = %q", got.LastError)
		}
		ok := e.enqueue(t, fenced.EnqueueParams{Kind: "ok"})
		e.waitState(t, ok.ID, fenced.JobSucceeded) // the worker survived
		if s := w.Stats(); s.Failed != 1 || s.Retried != 1 {
			t.Fatalf("stats = %+v", s)
		}
	})
	t.Run("RetriesFollowTheBackoffThenDeadLetter", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		backoff := fenced.Backoff{Base: 40 * time.Millisecond, Max: time.Second, Jitter: 0.5}
		e.newWorker(t, fenced.WorkerConfig{PollInterval: 5 * time.Millisecond, Backoff: backoff}, map[string]fenced.Handler{
			"flaky": func(ctx context.Context, j *fenced.JobRun) error { return errors.New("always") },
		})
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "flaky", MaxAttempts: 3})
		e.waitState(t, j.ID, fenced.JobFailed)
		_, attempts := e.job(t, j.ID)
		if len(attempts) != 3 || attempts[0].Outcome != "retry" || attempts[1].Outcome != "retry" || attempts[2].Outcome != "failed" {
			t.Fatalf("history = %+v", attempts)
		}
		for i := 1; i < 3; i++ {
			least := time.Duration(float64(backoff.Base<<(i-1)) * 0.5) // the smallest jittered delay
			if gap := attempts[i].StartedAt.Sub(*attempts[i-1].EndedAt); gap < least {
				t.Fatalf("attempt %d started %s after attempt %d ended, before the backoff of at least %s", i+1, gap, i, least)
			}
		}
	})
	t.Run("CancellingARunningJobEndsItCancelled", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		started := make(chan struct{}, 1)
		cause := make(chan error, 1)
		e.newWorker(t, fenced.WorkerConfig{LeaseTTL: 3 * time.Second, PollInterval: 10 * time.Millisecond}, map[string]fenced.Handler{
			"wait": func(ctx context.Context, j *fenced.JobRun) error {
				started <- struct{}{}
				<-ctx.Done()
				cause <- context.Cause(ctx)
				return ctx.Err()
			},
		})
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "wait"})
		<-started
		_, err := e.c.CancelJob(ctx(t), j.ID)
		wantNoErr(t, err, "cancel")
		if c := <-cause; !errors.Is(c, fenced.ErrJobCancelled) {
			t.Fatalf("handler context ended with %v", c)
		}
		e.waitState(t, j.ID, fenced.JobCancelled)
	})
	t.Run("ALostLeaseCancelsTheHandlersContext", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		started := make(chan struct{}, 1)
		cause := make(chan error, 1)
		w := e.newWorker(t, fenced.WorkerConfig{LeaseTTL: 3 * time.Second, PollInterval: 10 * time.Millisecond}, map[string]fenced.Handler{
			"wait": func(ctx context.Context, j *fenced.JobRun) error {
				started <- struct{}{}
				<-ctx.Done()
				cause <- context.Cause(ctx)
				return ctx.Err()
			},
		})
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "wait"})
		<-started
		_, err := e.c.AdvanceFences(ctx(t), 10) // every attempt's fence moves on
		wantNoErr(t, err, "advance")
		if c := <-cause; !errors.Is(c, fenced.ErrJobLost) {
			t.Fatalf("handler context ended with %v", c)
		}
		if got, _ := e.job(t, j.ID); got.State != fenced.JobRunning {
			t.Fatalf("the lost attempt wrote its end: %+v", got)
		}
		deadline := time.Now().Add(5 * time.Second)
		for w.Stats().Lost != 1 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if s := w.Stats(); s.Lost != 1 {
			t.Fatalf("stats = %+v", s)
		}
	})
	t.Run("GracefulStopLetsRunningJobsFinish", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		started, release := make(chan struct{}, 1), make(chan struct{})
		w, err := e.c.NewWorker(fenced.WorkerConfig{Queues: map[string]int{fenced.DefaultQueue: 1}, PollInterval: 10 * time.Millisecond})
		wantNoErr(t, err, "worker")
		w.Handle("slow", func(ctx context.Context, j *fenced.JobRun) error {
			started <- struct{}{}
			<-release
			return nil
		})
		wantNoErr(t, w.Start(context.Background()), "start")
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "slow"})
		<-started
		// Its one slot is busy: the next job waits for the slot, which frees
		// only after Stop began.
		late := e.enqueue(t, fenced.EnqueueParams{Kind: "slow"})
		stopped := make(chan error, 1)
		go func() { stopped <- w.Stop(ctx(t)) }()
		for !w.Stopping() {
			time.Sleep(time.Millisecond)
		}
		close(release)
		wantNoErr(t, <-stopped, "stop")
		e.waitState(t, j.ID, fenced.JobSucceeded)
		if got, _ := e.job(t, late.ID); got.State != fenced.JobQueued {
			t.Fatalf("a stopping worker claimed a new job: %+v", got)
		}
	})
	t.Run("StopPastItsDeadlineCancelsAndRequeues", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		started := make(chan struct{}, 1)
		w, err := e.c.NewWorker(fenced.WorkerConfig{PollInterval: 10 * time.Millisecond})
		wantNoErr(t, err, "worker")
		w.Handle("stuck", func(ctx context.Context, j *fenced.JobRun) error {
			started <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		})
		wantNoErr(t, w.Start(context.Background()), "start")
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "stuck", MaxAttempts: 1})
		<-started
		expired, cancel := context.WithCancel(context.Background())
		cancel()
		w.Stop(expired)
		got, attempts := e.job(t, j.ID)
		if got.State != fenced.JobQueued || got.MaxAttempts != 2 || len(attempts) != 1 || attempts[0].Outcome != "snoozed" {
			t.Fatalf("interrupted job = %+v %+v", got, attempts)
		}
	})
	t.Run("AnIdleWorkerIsWokenByEnqueue", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		if _, ok := e.d.(driver.JobListener); !ok {
			t.Skipf("%s has no enqueue notifications; idle workers poll", b.Name)
		}
		done := make(chan struct{}, 1)
		e.newWorker(t, fenced.WorkerConfig{PollInterval: time.Hour}, map[string]fenced.Handler{
			"ping": func(ctx context.Context, j *fenced.JobRun) error { done <- struct{}{}; return nil },
		})
		time.Sleep(100 * time.Millisecond) // let the worker find the queue empty and idle
		// Through another client, so that only the database's notification
		// can wake it: the poll is an hour.
		other := e.b.open(t, e.url, fenced.Config{})
		_, _, err := other.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "ping"})
		wantNoErr(t, err, "enqueue")
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("idle worker not woken by the enqueue")
		}
	})
	t.Run("AnIdleWorkerIsWokenByItsOwnClientsEnqueue", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		done := make(chan struct{}, 1)
		e.newWorker(t, fenced.WorkerConfig{PollInterval: time.Hour}, map[string]fenced.Handler{
			"ping": func(ctx context.Context, j *fenced.JobRun) error { done <- struct{}{}; return nil },
		})
		time.Sleep(100 * time.Millisecond) // let the worker find the queue empty and idle
		e.enqueue(t, fenced.EnqueueParams{Kind: "ping"})
		select {
		case <-done: // on every backend, without polling: the poll is an hour
		case <-time.After(10 * time.Second):
			t.Fatal("idle worker not woken by its own client's enqueue")
		}
	})
}

// runNothingLost: jobs worked by four worker clients whose handlers fail
// 10% of the time, one of them stopped abruptly mid-run. Every job ends
// succeeded or failed, the business table holds exactly one row per
// succeeded job (written in the completing job-fenced transaction), and none
// per failed job.
func runNothingLost(t *testing.T, b Backend) {
	e := setup(t, b)
	b.Exec(t, e.url, `CREATE TABLE fenced_test_effects (job_id BIGINT NOT NULL, fence BIGINT NOT NULL)`)
	n := 10000
	if testing.Short() {
		n = 2000
	}
	var ps []fenced.EnqueueParams
	for i := range n {
		ps = append(ps, fenced.EnqueueParams{Kind: "effect", MaxAttempts: 3, Args: map[string]int{"i": i}})
	}
	for len(ps) > 0 {
		k := min(len(ps), 1000)
		_, err := e.c.EnqueueMany(ctx(t), nil, ps[:k])
		wantNoErr(t, err, "enqueue")
		ps = ps[k:]
	}
	var mu sync.Mutex
	rng := newRand()
	handler := func(ctx context.Context, j *fenced.JobRun) error {
		return j.Tx(ctx, func(tx fenced.Tx) error {
			if _, err := tx.Exec(ctx, b.bind(`INSERT INTO fenced_test_effects (job_id, fence) VALUES ($1, $2)`), j.ID, j.Fence); err != nil {
				return err
			}
			mu.Lock()
			fail := rng.Float64() < 0.10
			mu.Unlock()
			if fail {
				return errors.New("random failure") // rolls back the effect
			}
			return j.CompleteTx(ctx, tx, nil)
		})
	}
	cfg := fenced.WorkerConfig{Queues: map[string]int{fenced.DefaultQueue: 8}, LeaseTTL: time.Second,
		PollInterval: 20 * time.Millisecond, Backoff: fastRetry}
	var workers []*fenced.Worker
	abrupt, kill := context.WithCancel(context.Background())
	for i := range 4 {
		c := e.c
		if i > 0 {
			c = e.b.open(t, e.url, fenced.Config{})
		}
		w, err := c.NewWorker(cfg)
		wantNoErr(t, err, "worker")
		w.Handle("effect", handler)
		runCtx := context.Background()
		if i == 3 {
			runCtx = abrupt
		}
		wantNoErr(t, w.Start(runCtx), "start")
		workers = append(workers, w)
	}
	m, err := e.c.StartMaintenance(context.Background(), fenced.MaintenanceConfig{Every: 50 * time.Millisecond, Backoff: fastRetry})
	wantNoErr(t, err, "maintenance")
	defer m.Stop()

	// Stop one worker abruptly once it has done some work.
	deadline := time.Now().Add(5 * time.Minute)
	for workers[3].Stats().Claimed < int64(n/20) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	kill()
	for {
		counts, err := e.c.CountJobs(ctx(t))
		wantNoErr(t, err, "counts")
		open := int64(0)
		for _, c := range counts {
			if !c.State.Finished() {
				open += c.Count
			}
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs still open: %+v", open, counts)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, w := range workers[:3] {
		w.Stop(ctx(t))
	}
	var succeeded, failed, effects, doubled, orphan int64
	l := e.acquire(t, "audit", "auditor", long)
	err = e.c.LeaseTx(ctx(t), *l, func(tx fenced.Tx) error {
		q := func(sql string, dest *int64) error { return tx.QueryRow(ctx(t), sql).Scan(dest) }
		if err := q(`SELECT count(*) FROM fenced_jobs WHERE state = 'succeeded'`, &succeeded); err != nil {
			return err
		}
		if err := q(`SELECT count(*) FROM fenced_jobs WHERE state = 'failed'`, &failed); err != nil {
			return err
		}
		if err := q(`SELECT count(*) FROM fenced_test_effects`, &effects); err != nil {
			return err
		}
		if err := q(`SELECT count(*) FROM (SELECT job_id FROM fenced_test_effects GROUP BY job_id HAVING count(*) > 1) d`, &doubled); err != nil {
			return err
		}
		return q(`SELECT count(*) FROM fenced_test_effects x JOIN fenced_jobs j ON j.id = x.job_id
			WHERE j.state <> 'succeeded' OR j.fence <> x.fence`, &orphan)
	})
	wantNoErr(t, err, "audit")
	t.Logf("%d jobs: %d succeeded, %d failed; %d effects; abruptly stopped worker claimed %d",
		n, succeeded, failed, effects, workers[3].Stats().Claimed)
	if succeeded+failed != int64(n) || effects != succeeded || doubled != 0 || orphan != 0 {
		t.Fatalf("lost or doubled work: %d succeeded + %d failed of %d; %d effects, %d doubled, %d not from the succeeding attempt",
			succeeded, failed, n, effects, doubled, orphan)
	}
}
