package jobbench

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// producerNap is how long the producer rests once the backlog is full.
const producerNap = 50 * time.Millisecond

// continuous fills the backlog, then works for o.Duration while a producer
// keeps the backlog topped up and a maintainer runs as in production. It
// records the throughput of every o.Window, and the first and the last
// minute's: over minutes, they show whether the queue keeps its pace as
// dead row versions and finished jobs pile up.
func (b *bench) continuous(ctx context.Context) (*Result, error) {
	in := b.newInserter()
	rep := b.report("insert", int64(b.o.Backlog), in.done.Load, nil)
	err := in.insert(ctx, b.o.Backlog)
	rep.stop()
	if err != nil {
		return nil, fmt.Errorf("insert: %w", err)
	}
	ws, err := b.startWorkers(ctx)
	if err != nil {
		return nil, err
	}
	m, err := b.startMaintenance(ctx)
	if err != nil {
		ws.stop()
		return nil, err
	}
	worked := func() int64 { return ws.stats().Succeeded }
	pctx, stopProducer := context.WithCancel(ctx)
	var perr error
	var wg sync.WaitGroup
	wg.Go(func() { perr = produce(pctx, in, b.o.Backlog, worked) })

	start, inserted0 := time.Now(), in.done.Load()
	insertedSince := func() int64 { return in.done.Load() - inserted0 }
	rep = b.report("work", 0, worked, insertedSince)
	windows := recordWindows(ctx, b.o.Window, b.o.Duration, start, worked, in.done.Load, nil, b.o.OnWindow)
	jobs, inserted, secs := worked(), insertedSince(), time.Since(start).Seconds()
	rep.stop()
	stopProducer()
	wg.Wait()
	ws.stop()
	m.Stop()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if perr != nil {
		return nil, perr
	}
	res := b.result(Continuous, ws)
	res.Jobs, res.Seconds, res.JobsPerSec = jobs, secs, rate(jobs, secs)
	res.Inserted, res.InsertSeconds, res.InsertPerSec = inserted, secs, rate(inserted, secs)
	res.setWindows(windows, b.o.Window)
	return res, nil
}

// produce inserts a batch whenever fewer than backlog jobs wait, until ctx
// ends.
func produce(ctx context.Context, in *inserter, backlog int, worked func() int64) error {
	for ctx.Err() == nil {
		if in.done.Load()-worked() >= int64(backlog) {
			sleep(ctx, producerNap)
			continue
		}
		if err := in.insertBatch(ctx, InsertBatch); err != nil && ctx.Err() == nil {
			return fmt.Errorf("insert: %w", err)
		}
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
