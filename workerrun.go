package fenced

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/fenced/fenced/driver"
)

// fetch is one queue's claim loop: it claims as many jobs as it has free
// slots (up to FetchBatch per statement) and runs each in its own goroutine.
func (w *Worker) fetch(queue string, concurrency int) {
	defer w.fetchWG.Done()
	slots := make(chan struct{}, concurrency)
	batch := w.cfg.FetchBatch
	if batch <= 0 {
		batch = min(concurrency, 100)
	}
	for {
		select {
		case slots <- struct{}{}:
		case <-w.stopFetch:
			return
		case <-w.runCtx.Done():
			return
		}
		free := 1
		for free < batch {
			select {
			case slots <- struct{}{}:
				free++
				continue
			default:
			}
			break
		}
		jobs, err := w.c.ClaimJobs(w.runCtx, queue, w.cfg.Owner, free, w.cfg.LeaseTTL)
		if err != nil && w.runCtx.Err() == nil {
			w.log.Warn("fenced: claim failed", "queue", queue, "err", err)
		}
		for range free - len(jobs) {
			<-slots
		}
		for _, j := range jobs {
			w.stats.claimed.Add(1)
			w.jobsWG.Add(1)
			go func() {
				defer func() { <-slots }()
				w.run(j)
			}()
		}
		if len(jobs) < free { // the queue is drained (or failing): wait
			select {
			case <-w.wake[queue]:
			case <-time.After(w.cfg.PollInterval):
			case <-w.stopFetch:
				return
			case <-w.runCtx.Done():
				return
			}
		}
	}
}

// run runs one attempt and writes its outcome.
func (w *Worker) run(j *Job) {
	defer w.jobsWG.Done()
	claimedAt := w.c.now()
	ctx, cancel := context.WithCancelCause(w.runCtx)
	defer cancel(nil)
	w.mu.Lock()
	w.active[j.ID] = &activeJob{cancel: cancel, ref: j.Ref(), trustedUntil: claimedAt.Add(w.trustFor())}
	h := w.handlers[j.Kind]
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.active, j.ID)
		w.mu.Unlock()
	}()

	r := &JobRun{Job: j, c: w.c}
	var err error
	if h == nil {
		err = fmt.Errorf("no handler registered for kind %q on worker %s", j.Kind, w.cfg.Owner)
	} else {
		err = callHandler(ctx, h, r)
	}
	end, write := w.outcome(ctx, r, err)
	if !write {
		if context.Cause(ctx) == ErrJobLost {
			w.stats.lost.Add(1)
		}
		return
	}
	if err := w.end(end); err != nil {
		if errors.Is(err, driver.ErrStale) {
			w.stats.stale.Add(1)
		}
		if w.runCtx.Err() == nil {
			w.log.Warn("fenced: ending job failed", "job", j.ID, "fence", j.Fence, "err", err)
		}
		return
	}
	w.count(end, r)
}

func (w *Worker) count(end JobEnd, r *JobRun) {
	s := &w.stats
	switch {
	case end.Kind == EndComplete:
		s.succeeded.Add(1)
	case end.Kind == EndSnooze:
		s.snoozed.Add(1)
	case end.Kind == EndCancel:
		s.cancelled.Add(1)
	case end.Discard || r.Attempt >= r.MaxAttempts:
		s.failed.Add(1)
	default:
		s.retried.Add(1)
	}
}

// trustFor is how long after a claim or heartbeat a lease can be trusted
// locally: the TTL less a tenth for safety.
func (w *Worker) trustFor() time.Duration { return w.cfg.LeaseTTL - w.cfg.LeaseTTL/10 }

// callHandler runs h, turning a panic into an error with its stack.
func callHandler(ctx context.Context, h Handler, r *JobRun) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return h(ctx, r)
}

// endRequest is one attempt's final write waiting for the completer.
type endRequest struct {
	end  JobEnd
	done chan error
}

// end hands an outcome to the completer and waits for its result.
func (w *Worker) end(e JobEnd) error {
	req := endRequest{end: e, done: make(chan error, 1)}
	select {
	case w.ends <- req:
	case <-w.runCtx.Done():
		return w.runCtx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-w.runCtx.Done():
		return w.runCtx.Err()
	}
}

// completer writes outcomes in batches: whatever queued up while the previous
// batch was being written goes in the next statement, each job guarded by
// its own fence.
func (w *Worker) completer(ctx context.Context) {
	defer w.bgWG.Done()
	for {
		var batch []endRequest
		select {
		case r := <-w.ends:
			batch = append(batch, r)
		case <-ctx.Done():
			return
		}
	more:
		for len(batch) < MaxClaimBatch {
			select {
			case r := <-w.ends:
				batch = append(batch, r)
			default:
				break more
			}
		}
		ends := make([]JobEnd, len(batch))
		for i, r := range batch {
			ends[i] = r.end
		}
		errs, err := w.c.EndJobs(w.runCtx, nil, ends)
		for i, r := range batch {
			if err != nil {
				r.done <- err
			} else {
				r.done <- errs[i]
			}
		}
	}
}

// heartbeats extends every running job's lease in one statement per tick,
// cancels jobs reported lost or asked to cancel, and cancels jobs whose local
// trust window ran out while heartbeats failed.
func (w *Worker) heartbeats(ctx context.Context) {
	defer w.bgWG.Done()
	t := time.NewTicker(w.cfg.HeartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		w.mu.Lock()
		refs := make([]JobRef, 0, len(w.active))
		for _, a := range w.active {
			refs = append(refs, a.ref)
		}
		w.mu.Unlock()
		if len(refs) == 0 {
			continue
		}
		start := w.c.now()
		res, err := w.c.HeartbeatJobs(ctx, refs, w.cfg.LeaseTTL)
		w.mu.Lock()
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("fenced: heartbeat failed", "jobs", len(refs), "err", err)
			}
			now := w.c.now()
			for _, a := range w.active {
				if now.After(a.trustedUntil) {
					a.cancel(ErrJobLost)
				}
			}
		} else {
			w.applyHeartbeat(res, start)
		}
		w.mu.Unlock()
	}
}

// applyHeartbeat updates trust windows and cancels lost and cancelled jobs;
// w.mu is held.
func (w *Worker) applyHeartbeat(res *HeartbeatResult, start time.Time) {
	for _, id := range res.Extended {
		if a := w.active[id]; a != nil {
			a.trustedUntil = start.Add(w.trustFor())
		}
	}
	for _, id := range res.Lost {
		if a := w.active[id]; a != nil {
			a.cancel(ErrJobLost)
		}
	}
	for _, id := range res.CancelRequested {
		if a := w.active[id]; a != nil {
			a.cancel(ErrJobCancelled)
		}
	}
}
