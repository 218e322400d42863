package jobbench

import (
	"context"
	"time"

	"github.com/fenced/fenced"
)

// pollInterval is the workers' idle poll, short as in River's benchmark
// (FetchPollInterval 20ms); PostgreSQL wakes them sooner on enqueue.
const pollInterval = 20 * time.Millisecond

// workers are the run's fenced Workers, sharing its concurrency.
type workers []*fenced.Worker

// startWorkers starts o.Instances workers on the benchmark's queue, each
// with a no-op handler.
func (b *bench) startWorkers(ctx context.Context) (workers, error) {
	return b.startWorkersWith(ctx, noop)
}

// startWorkersWith starts o.Instances workers on the benchmark's queue, each
// running handle.
func (b *bench) startWorkersWith(ctx context.Context, handle fenced.Handler) (workers, error) {
	o := b.o
	if b.watch != nil {
		handle = b.watch.wrap(handle)
	}
	ws := make(workers, 0, o.Instances)
	for i := range o.Instances {
		n := o.Concurrency / o.Instances
		if i < o.Concurrency%o.Instances {
			n++
		}
		w, err := b.db.c.NewWorker(fenced.WorkerConfig{
			Queues:       map[string]int{o.Queue: n},
			FetchBatch:   o.FetchBatch,
			PollInterval: pollInterval,
			Logger:       o.Logger,
		})
		if err != nil {
			return nil, err
		}
		w.Handle(Kind, handle)
		ws = append(ws, w)
	}
	for i, w := range ws {
		if err := w.Start(ctx); err != nil {
			ws[:i].stop()
			return nil, err
		}
	}
	return ws, nil
}

func noop(context.Context, *fenced.JobRun) error { return nil }

// stop stops every worker gracefully, allowing running jobs a minute.
func (ws workers) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, w := range ws {
		w.Stop(ctx)
	}
}

// stats adds up the workers' stats.
func (ws workers) stats() fenced.WorkerStats {
	var s fenced.WorkerStats
	for _, w := range ws {
		x := w.Stats()
		s.Claimed += x.Claimed
		s.Succeeded += x.Succeeded
		s.Failed += x.Failed
		s.Retried += x.Retried
		s.Snoozed += x.Snoozed
		s.Cancelled += x.Cancelled
		s.Lost += x.Lost
		s.Stale += x.Stale
		s.HandedOff += x.HandedOff
	}
	return s
}
