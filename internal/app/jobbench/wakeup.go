package jobbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fenced/fenced"
)

// wakeupTimeout bounds the wait for one wake-up: an idle worker polls at
// least every second, so a job not started by then means a stuck worker.
const wakeupTimeout = 30 * time.Second

// wakeups measures how soon an idle worker starts a single job: o.Wakeups
// times it enqueues one job into the empty queue, waits for the handler to
// start it, and rests 50–100 ms so the worker is idle again. The latency is
// the attempt's start minus the job's run_at, both from the database clock.
func (b *bench) wakeups(ctx context.Context) (*Result, error) {
	lat := &latencies{}
	started := make(chan struct{}, 1)
	ws, err := b.startWorkersWith(ctx, func(ctx context.Context, r *fenced.JobRun) error {
		lat.record(r)
		select {
		case started <- struct{}{}:
		default:
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	defer ws.stop()
	in := b.newInserter()
	start := time.Now()
	for i := range b.o.Wakeups {
		sleep(ctx, time.Duration(50+rand.IntN(50))*time.Millisecond)
		if err := in.insertBatch(ctx, 1); err != nil {
			return nil, fmt.Errorf("insert: %w", err)
		}
		select {
		case <-started:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wakeupTimeout):
			return nil, fmt.Errorf("wake-up %d: the job did not start within %s", i+1, wakeupTimeout)
		}
		if b.o.Progress != nil && (i+1)%10 == 0 {
			b.o.Progress(Snapshot{Phase: "wake-up", Elapsed: time.Since(start), Done: int64(i + 1), Total: int64(b.o.Wakeups)})
		}
	}
	res := b.result(Wakeup, ws)
	res.Jobs, res.Seconds = int64(b.o.Wakeups), time.Since(start).Seconds()
	res.Latency = lat.percentiles()
	return res, nil
}
