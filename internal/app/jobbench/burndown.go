package jobbench

import (
	"context"
	"fmt"
	"time"

	"github.com/fenced/fenced"
)

// donePoll is how often a run reads the workers' counters to see whether the
// burn-down finished: the end time is the first poll that sees it.
const donePoll = 2 * time.Millisecond

// stallAfter ends a burn-down that made no progress for this long: a job
// whose outcome could not be written stays running until its lease expires
// and a maintainer takes it back, which a benchmark does not wait for.
var stallAfter = 2 * fenced.DefaultJobTTL

// burnDown inserts o.Jobs jobs, then works them all.
func (b *bench) burnDown(ctx context.Context) (res *Result, err error) {
	n := int64(b.o.Jobs)
	in := b.newInserter()
	rep := b.report("insert", n, in.done.Load, nil)
	t0 := time.Now()
	err = in.insert(ctx, b.o.Jobs)
	insertTime := time.Since(t0)
	rep.stop()
	if len(in.workflows) > 0 && !b.o.Keep {
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if derr := b.deleteWorkflows(cctx, in.workflows); derr != nil && err == nil {
				res, err = nil, derr
			}
		}()
	}
	if err != nil {
		return nil, fmt.Errorf("insert: %w", err)
	}

	if err := b.db.analyze(ctx); err != nil {
		return nil, err
	}
	mark0 := b.db.mark(ctx)
	ws, err := b.startWorkers(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	rep = b.report("work", n, func() int64 { return ws.stats().Succeeded }, nil)
	end, err := waitWorked(ctx, ws, n)
	mark1 := b.db.mark(ctx)
	rep.stop()
	ws.stop()
	if err != nil {
		return nil, err
	}
	res = b.result(BurnDown, ws)
	res.Jobs, res.Seconds = n, end.Sub(start).Seconds()
	res.JobsPerSec = rate(n, res.Seconds)
	res.Inserted, res.InsertSeconds = n, insertTime.Seconds()
	res.InsertPerSec = rate(n, res.InsertSeconds)
	res.WALPerJob = walPerJob(mark0.wal, mark1.wal, n)
	res.DBWork = b.db.dbWork(ctx, mark0, mark1, n)
	return res, nil
}

// waitWorked returns the time the workers had succeeded n jobs.
func waitWorked(ctx context.Context, ws workers, n int64) (time.Time, error) {
	t := time.NewTicker(donePoll)
	defer t.Stop()
	last, lastAt := int64(-1), time.Now()
	for {
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case now := <-t.C:
			done := ws.stats().Succeeded
			if done >= n {
				return now, nil
			}
			if done != last {
				last, lastAt = done, now
			} else if now.Sub(lastAt) > stallAfter {
				return time.Time{}, fmt.Errorf("burn-down stalled: %d of %d jobs succeeded, none in the last %s", done, n, stallAfter)
			}
		}
	}
}
