package fenced

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// jobDriver is a backend with the job queue: what a wrapper that keeps the
// queue embeds (a wrapper has the capabilities it embeds, and no other).
type jobDriver interface {
	driver.Driver
	driver.JobDriver
}

// faultDriver wraps a real driver to inject latency, lost replies and hangs.
type faultDriver struct {
	jobDriver
	hbDelay     time.Duration // every heartbeat takes at least this long
	hbLostReply atomic.Bool   // heartbeats commit but their reply is lost
	hangClaims  atomic.Bool   // claims wait until their ctx ends
	hangFinish  atomic.Bool   // outcome writes wait until their ctx ends
}

func (d *faultDriver) HeartbeatJobs(ctx context.Context, refs []fencedtype.JobRef, ttl time.Duration) (*fencedtype.HeartbeatResult, error) {
	if d.hbDelay > 0 {
		select {
		case <-time.After(d.hbDelay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	res, err := d.jobDriver.HeartbeatJobs(ctx, refs, ttl)
	if err == nil && d.hbLostReply.Load() {
		return nil, errors.New("connection reset after commit")
	}
	return res, err
}

func (d *faultDriver) ClaimJobs(ctx context.Context, p driver.ClaimJobsParams) ([]*fencedtype.Job, error) {
	if d.hangClaims.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return d.jobDriver.ClaimJobs(ctx, p)
}

func (d *faultDriver) EndJobs(ctx context.Context, tx driver.Tx, ends []fencedtype.JobEnd) ([]error, []fencedtype.JobEnded, error) {
	if d.hangFinish.Load() {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	}
	return d.jobDriver.EndJobs(ctx, tx, ends)
}

func faultClient(t *testing.T) (*Client, *faultDriver) {
	t.Helper()
	ctx := context.Background()
	base, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "w.db"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { base.Close() })
	if _, err := base.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	fd := &faultDriver{jobDriver: base.Driver().(jobDriver)}
	return New(fd, Config{}), fd
}

// One attempt whose handler is slow to return after its lease was lost
// must not make the heartbeat of the worker's other, healthy attempts fail
// until they are cancelled as lost too.
func TestLostAttemptDoesNotPoisonHeartbeats(t *testing.T) {
	ctx := context.Background()
	c, fd := faultClient(t)
	fd.hbDelay = 5 * time.Millisecond // a database a few ms away
	w, err := c.NewWorker(WorkerConfig{Owner: "w", Queues: map[string]int{DefaultQueue: 2},
		LeaseTTL: 500 * time.Millisecond, HeartbeatEvery: 100 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var healthyCause atomic.Value
	w.Handle("stuck", func(ctx context.Context, j *JobRun) error {
		// The attempt is taken away (as a recovery would), and the handler
		// takes a while to notice.
		if err := c.SnoozeJob(ctx, j.Ref(), time.Hour); err != nil {
			t.Error(err)
		}
		time.Sleep(2 * time.Second)
		return nil
	})
	w.Handle("healthy", func(ctx context.Context, j *JobRun) error {
		select {
		case <-ctx.Done():
			healthyCause.Store(context.Cause(ctx))
			return ctx.Err()
		case <-time.After(2 * time.Second):
			return nil
		}
	})
	if _, err := c.EnqueueMany(ctx, nil, []EnqueueParams{{Kind: "stuck"}, {Kind: "healthy"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	w.Stop(sctx)
	if cause := healthyCause.Load(); cause != nil {
		t.Fatalf("the healthy attempt was cancelled: %v", cause)
	}
	if s := w.Stats(); s.Succeeded != 1 {
		t.Fatalf("stats %+v, want the healthy job succeeded", s)
	}
}

// A handler that returns nil after its local trust window ran out (the
// heartbeats committed but their replies were lost) still has its result
// written: the fence decides, and here the attempt is still current.
func TestResultWrittenAfterLocalTrustRanOut(t *testing.T) {
	ctx := context.Background()
	c, fd := faultClient(t)
	w, err := c.NewWorker(WorkerConfig{Owner: "w", LeaseTTL: 600 * time.Millisecond,
		HeartbeatEvery: 100 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("work", func(ctx context.Context, j *JobRun) error {
		fd.hbLostReply.Store(true)
		<-ctx.Done() // the worker no longer trusts the lease...
		fd.hbLostReply.Store(false)
		return nil // ...but the work was done
	})
	job, _, err := c.Enqueue(ctx, EnqueueParams{Kind: "work"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if s := w.Stats(); s.Succeeded+s.Lost+s.Stale > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	w.Stop(sctx)
	got, _, err := c.GetJob(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != JobSucceeded {
		t.Fatalf("job is %s after its handler returned nil under a current attempt (stats %+v)", got.State, w.Stats())
	}
}

// Stop with a deadline returns soon after it even when a claim hangs (a
// database that stopped answering).
func TestStopReturnsWhileClaimHangs(t *testing.T) {
	ctx := context.Background()
	c, fd := faultClient(t)
	fd.hangClaims.Store(true)
	w, err := c.NewWorker(WorkerConfig{Owner: "w", LeaseTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("work", func(ctx context.Context, j *JobRun) error { return nil }) // Start refuses a worker without handlers
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	stopWithin(t, w, 200*time.Millisecond, 3*time.Second)
}

// Stop with a deadline returns soon after it even when the outcome write
// hangs.
func TestStopReturnsWhileOutcomeWriteHangs(t *testing.T) {
	ctx := context.Background()
	c, fd := faultClient(t)
	w, err := c.NewWorker(WorkerConfig{Owner: "w", LeaseTTL: time.Second, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var ran sync.WaitGroup
	ran.Add(1)
	w.Handle("work", func(ctx context.Context, j *JobRun) error {
		fd.hangFinish.Store(true)
		ran.Done()
		return nil
	})
	if _, _, err := c.Enqueue(ctx, EnqueueParams{Kind: "work"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ran.Wait()
	stopWithin(t, w, 200*time.Millisecond, 3*time.Second)
}

func stopWithin(t *testing.T, w *Worker, grace, limit time.Duration) {
	t.Helper()
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	done := make(chan struct{})
	go func() { w.Stop(sctx); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("Stop with a %s deadline still running after %s", grace, limit)
	}
}
