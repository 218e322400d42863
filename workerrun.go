package fenced

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// fetch is one queue's claim loop: it claims as many jobs of its kinds as it
// has free slots (up to FetchBatch per statement) and runs each in its own
// goroutine.
func (w *Worker) fetch(queue string, concurrency int) {
	defer w.fetchWG.Done()
	qs := w.queues[queue]
	slots := qs.tokens
	batch := w.cfg.FetchBatch
	if batch <= 0 {
		batch = min(concurrency, DefaultFetchBatch)
	}
	batch = min(batch, MaxClaimBatch) // ClaimJobs refuses more
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
		select { // a stopping worker claims nothing more, even with free slots
		case <-w.stopFetch:
			return
		default:
		}
		// Registered before the claim: an enqueue while it runs wakes the
		// wait below.
		woken, waited := w.c.WaitForJobs(queue)
		claimedAt := w.c.now() // the lease runs from before the statement
		jobs, err := w.c.ClaimJobs(w.claimCtx, queue, w.cfg.Owner, free, w.cfg.LeaseTTL, w.kinds...)
		if err != nil && w.runCtx.Err() == nil {
			w.log.Warn("fenced: claim failed", "queue", queue, "err", err)
		}
		for range free - len(jobs) {
			<-slots
		}
		qs.drained.Store(len(jobs) < free)
		for _, j := range jobs {
			w.stats.claimed.Add(1)
			w.jobsWG.Add(1)
			go w.runIn(slots, j, w.track(j, claimedAt))
		}
		if len(jobs) < free { // the queue is drained (or failing): wait
			poll := time.NewTimer(w.cfg.PollInterval)
			select {
			case <-woken:
			case <-poll.C:
			case <-w.stopFetch:
			case <-w.runCtx.Done():
			}
			poll.Stop()
		}
		waited()
	}
}

// runIn runs attempt j in a slot taken from slots, and gives the slot back
// when done. A completion that was handed a task it released runs it
// next, in the same slot (handoff.go).
func (w *Worker) runIn(slots chan struct{}, j *Job, a *activeJob) {
	defer func() { <-slots }()
	for j != nil {
		j, a = w.run(j, a)
	}
}

// track registers a claimed attempt. A newer attempt of a job this worker
// still runs proves the older one lost: it is cancelled at once.
func (w *Worker) track(j *Job, claimedAt time.Time) *activeJob {
	ctx, cancel := context.WithCancelCause(w.runCtx)
	a := &activeJob{ctx: ctx, cancel: cancel, ref: j.Ref(), trustedUntil: claimedAt.Add(w.trustFor())}
	w.mu.Lock()
	defer w.mu.Unlock()
	if old := w.active[j.ID]; old != nil {
		old.lost = true
		old.cancel(ErrJobLost)
	}
	w.active[j.ID] = a
	return a
}

// run runs one attempt and writes its outcome, and returns the attempt
// its completion was handed (handoff.go), tracked, or nil.
func (w *Worker) run(j *Job, a *activeJob) (next *Job, nextActive *activeJob) {
	defer w.jobsWG.Done()
	ctx := a.ctx
	defer a.cancel(nil)
	w.mu.Lock()
	h, o := w.handlers[j.Kind], w.kindOpts[j.Kind]
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		if w.active[j.ID] == a { // not a newer attempt of the same job
			delete(w.active, j.ID)
		}
		w.mu.Unlock()
	}()

	r := &JobRun{Job: j, c: w.c, policy: w.policyOf(j, o)}
	ctx = w.hooks.begin(ctx, r)
	begun := time.Now()
	var err error
	switch t := r.policy.timeout; {
	case h == nil: // only from a driver that ignores the claim's kind filter
		err = fmt.Errorf("no handler registered for kind %q on worker %s", j.Kind, w.cfg.Owner)
	case t > 0:
		hctx, cancel := context.WithTimeoutCause(ctx, t, ErrJobTimeout)
		c := w.callTimed(hctx, h, r)
		err = c.err
		if c.timedOut {
			// Whatever the handler returned (a completion that committed
			// before the deadline still stands: settle sees it first).
			err = timedOut(t)
			if c.abandoned {
				err = fmt.Errorf("%w; the handler had not returned %s later and was abandoned", err, w.cfg.TimeoutGrace)
			}
		}
		cancel()
	default:
		err = callHandler(ctx, h, r)
	}
	e, handed := w.settle(ctx, r, a, err)
	e.Duration = time.Since(begun)
	w.hooks.end(ctx, r, e)
	if handed != nil {
		return handed.job, handed.active
	}
	return nil, nil
}

// settle writes the outcome of attempt a, whose handler returned err,
// counts it, and says what became of it, with the attempt its completion
// was handed, if any.
func (w *Worker) settle(ctx context.Context, r *JobRun, a *activeJob, err error) (AttemptEnd, *handedTask) {
	j := r.Job
	w.mu.Lock()
	lost := a.lost
	w.mu.Unlock()
	switch completed, txErr := r.completion(); {
	case completed == completionCommitted:
		// Completed in the handler's own transaction, which committed.
		w.stats.succeeded.Add(1)
		if err != nil && w.runCtx.Err() == nil {
			w.log.Warn("fenced: handler returned an error after its job's completion committed", "job", j.ID, "fence", j.Fence, "err", err)
		}
		return AttemptEnd{Outcome: fencedtype.OutcomeSucceeded, Err: err}, nil
	case err != nil:
	case completed == completionUnseen:
		if outcome := w.countEnded(r); outcome != "" {
			return AttemptEnd{Outcome: outcome}, nil // its completion, in a transaction of the caller's, committed
		}
		err = notCommitted(txErr)
	case completed != notCompleted:
		err = notCommitted(txErr)
	}
	end, write := w.outcome(ctx, r, err, lost)
	if !write {
		if context.Cause(ctx) == ErrJobLost {
			w.stats.lost.Add(1)
		}
		return AttemptEnd{Outcome: fencedtype.OutcomeLost, Err: err}, nil
	}
	h, werr := w.end(end, r.Job.WorkflowID != 0, j.Queue)
	if werr != nil {
		// The attempt was ended at its own fence by another path (the
		// handler, through the Client): count what that path wrote.
		var stale *StaleError
		if errors.As(werr, &stale) && stale.CurrentFence == j.Fence {
			if outcome := w.countEnded(r); outcome != "" {
				return AttemptEnd{Outcome: outcome, Err: err}, nil
			}
		}
		untrusted := context.Cause(ctx) == ErrJobLost // and the fence says it was lost indeed
		switch {
		case untrusted && errors.Is(werr, fencedtype.ErrStale):
			w.stats.lost.Add(1)
		case errors.Is(werr, fencedtype.ErrStale):
			w.stats.stale.Add(1)
		}
		if w.runCtx.Err() == nil && !untrusted {
			w.log.Warn("fenced: ending job failed", "job", j.ID, "fence", j.Fence, "err", werr)
		}
		e := AttemptEnd{Err: err, WriteErr: werr}
		if errors.Is(werr, fencedtype.ErrStale) || errors.Is(werr, fencedtype.ErrNotFound) {
			e.Outcome = fencedtype.OutcomeLost
		}
		return e, nil
	}
	return AttemptEnd{Outcome: w.count(end, r), Err: err}, h
}

// notCommitted is the error of a handler that returned nil though its
// completion did not commit (txErr: why, when known).
func notCommitted(txErr error) error {
	if txErr == nil {
		txErr = errors.New("the job is still running")
	}
	return fmt.Errorf("the handler returned nil, but its completion (CompleteTx) did not commit: %w", txErr)
}

// countEnded counts the attempt by the outcome recorded for it when
// something other than the worker's own outcome write ended it: the handler,
// completing in a transaction of its own, or ending the attempt through the
// Client. It reports false when no such outcome is recorded (the attempt
// still runs, recovery took it back, or the read failed).
func (w *Worker) countEnded(r *JobRun) (outcome string) {
	ctx, cancel := context.WithTimeout(w.runCtx, w.cfg.LeaseTTL)
	defer cancel()
	_, attempts, err := w.c.GetJob(ctx, r.ID)
	if err != nil {
		if w.runCtx.Err() == nil {
			w.log.Warn("fenced: reading how a job's attempt ended failed", "job", r.ID, "fence", r.Fence, "err", err)
		}
		return ""
	}
	i := slices.IndexFunc(attempts, func(a JobAttempt) bool { return a.Fence == r.Fence && a.Attempt == r.Attempt })
	if i < 0 {
		return ""
	}
	s := &w.stats
	switch attempts[i].Outcome {
	case fencedtype.OutcomeSucceeded:
		s.succeeded.Add(1)
	case fencedtype.OutcomeRetry:
		s.retried.Add(1)
	case fencedtype.OutcomeFailed:
		s.failed.Add(1)
	case fencedtype.OutcomeSnoozed:
		s.snoozed.Add(1)
	case fencedtype.OutcomeCancelled:
		s.cancelled.Add(1)
	default: // running, or lost: not ended by this worker
		return ""
	}
	return attempts[i].Outcome
}

// count counts an end the worker wrote and returns its outcome.
func (w *Worker) count(end JobEnd, r *JobRun) string {
	s := &w.stats
	switch {
	case end.Kind == EndComplete:
		s.succeeded.Add(1)
		return fencedtype.OutcomeSucceeded
	case end.Kind == EndSnooze:
		s.snoozed.Add(1)
		return fencedtype.OutcomeSnoozed
	case end.Kind == EndCancel:
		s.cancelled.Add(1)
		return fencedtype.OutcomeCancelled
	case end.Discard || r.Attempt >= r.MaxAttempts:
		s.failed.Add(1)
		return fencedtype.OutcomeFailed
	default:
		s.retried.Add(1)
		return fencedtype.OutcomeRetry
	}
}

// trustFor is how long after a claim or heartbeat a lease can be trusted
// locally: the TTL less a tenth for safety.
func (w *Worker) trustFor() time.Duration { return w.cfg.LeaseTTL - w.cfg.LeaseTTL/10 }

// callHandler runs h, turning a panic into a *PanicError with its stack.
func callHandler(ctx context.Context, h Handler, r *JobRun) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: string(debug.Stack())}
		}
	}()
	return h(ctx, r)
}

// endRequest is one attempt's final write waiting for the completer.
type endRequest struct {
	end   JobEnd
	task  bool   // of a workflow's task: its completion may be handed a dependent
	queue string // the attempt's queue
	done  chan endResult
}

type endResult struct {
	err   error
	whole bool // the batch's statement failed, not this job's guard
	next  *Job // the attempt handed to this completion (handoff.go), or nil
	sent  time.Time
}

// end hands an outcome to the completer and waits for its result. A
// failure of the whole write (a dropped connection) is retried until the
// attempt's lease could have run out; a refusal of this job is not.
func (w *Worker) end(e JobEnd, task bool, queue string) (*handedTask, error) {
	giveUp := w.c.now().Add(w.cfg.LeaseTTL)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		h, err, whole := w.endOnce(e, task, queue)
		if !whole || err == nil || w.runCtx.Err() != nil || w.c.now().Add(wait).After(giveUp) {
			return h, err
		}
		w.log.Warn("fenced: writing a job's outcome failed; retrying", "job", e.Ref.ID, "err", err)
		sleepCtx(w.runCtx, wait)
	}
}

// endOnce writes one outcome through the completer; whole reports an error
// of the batch's statement rather than of this job.
func (w *Worker) endOnce(e JobEnd, task bool, queue string) (h *handedTask, err error, whole bool) {
	req := endRequest{end: e, task: task, queue: queue, done: make(chan endResult, 1)}
	select {
	case w.ends <- req:
	case <-w.runCtx.Done():
		return nil, w.runCtx.Err(), false
	}
	select {
	case r := <-req.done:
		if r.next != nil {
			h = w.takeHanded(r.next, r.sent)
		}
		return h, r.err, r.whole
	case <-w.runCtx.Done():
		return nil, w.runCtx.Err(), false
	}
}

// completerWrites is how many outcome batches a worker writes at once when
// they hand off tasks: two, so that the claim's work a hand-off does
// (handoff.go), which the claims' statements then no longer do beside it,
// can use a second core. Other batches are written one at a time
// (measured: two at once cost a plain burn-down 9%, in smaller batches).
const completerWrites = 2

// completer writes outcomes in batches: whatever queued up while the
// batches in flight were being written goes in the next statement, each job
// guarded by its own fence.
func (w *Worker) completer(ctx context.Context) {
	defer w.bgWG.Done()
	var writing sync.WaitGroup
	defer writing.Wait()
	// Each writer's buffers, used again by its next batch (endJobs keeps
	// neither).
	type buffers struct {
		batch []endRequest
		ends  []JobEnd
	}
	free := make(chan *buffers, completerWrites)
	for range completerWrites {
		free <- &buffers{make([]endRequest, 0, MaxClaimBatch), make([]JobEnd, 0, MaxClaimBatch)}
	}
	var last chan struct{} // closed when the last batch is written
	lastTasks := false     // it held task completions
	for {
		if last != nil && !lastTasks {
			select {
			case <-last:
			case <-ctx.Done():
				return
			}
		}
		var buf *buffers
		select {
		case buf = <-free:
		case <-ctx.Done():
			return
		}
		batch := buf.batch[:0]
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
		written := make(chan struct{})
		last, lastTasks = written, handsOff(batch)
		tasks := lastTasks
		writing.Add(1)
		go func() {
			defer writing.Done()
			buf.batch, buf.ends = batch, w.writeEnds(batch, buf.ends[:0], tasks)
			free <- buf
			close(written)
		}()
	}
}

// handsOff tells whether a batch holds a task's completion, which may be
// handed a task it releases.
func handsOff(batch []endRequest) bool {
	return slices.ContainsFunc(batch, endRequest.completesTask)
}

// completesTask tells whether r is a task's completion, which may be
// handed a task it releases.
func (r endRequest) completesTask() bool { return r.task && r.end.Kind == EndComplete }

// writeEnds writes one batch of outcomes (ends: a buffer for them), with
// the hand-off when tasks (handsOff), and answers each request; it returns
// the buffer.
func (w *Worker) writeEnds(batch []endRequest, ends []JobEnd, tasks bool) []JobEnd {
	for _, r := range batch {
		ends = append(ends, r.end)
	}
	// Bounded: past a lease's length the attempts are lost anyway, and a
	// hung statement must not hold every outcome (and Stop) for ever.
	ectx, cancel := context.WithTimeout(w.runCtx, w.cfg.LeaseTTL)
	defer cancel()
	sent := w.c.now() // a handed-off lease runs from before the statement
	var h *driver.Handoff
	if tasks {
		h = w.handoff()
	}
	if h != nil {
		h.Spare = w.holdSpare(batch)
		defer w.releaseSpare(h.Spare)
	}
	errs, _, taken, spare, err := w.c.endJobsHandingOff(ectx, nil, ends, true, h) // outcome checked each output
	// Before the answers: the runs that completed keep Stop waiting until
	// the spare slots' attempts are counted (takeHanded).
	for _, j := range spare {
		if h.Spare[j.Queue] > 0 {
			h.Spare[j.Queue]--
			go w.runIn(w.queues[j.Queue].tokens, j, w.takeHanded(j, sent).active)
		}
	}
	for i, r := range batch {
		switch {
		case err != nil:
			r.done <- endResult{err: err, whole: true}
		case taken != nil:
			r.done <- endResult{err: errs[i], next: taken[i], sent: sent}
		default:
			r.done <- endResult{err: errs[i]}
		}
	}
	return ends
}

// heartbeats extends every running job's lease in one statement per tick and
// cancels jobs reported lost or asked to cancel; a watchdog, ticking far
// more often, cancels jobs whose local trust window ran out (heartbeats
// failing or slow), so a handler hears of it before the lease is gone.
func (w *Worker) heartbeats(ctx context.Context) {
	defer w.bgWG.Done()
	beat := time.NewTicker(w.cfg.HeartbeatEvery)
	defer beat.Stop()
	watch := time.NewTicker(max(w.cfg.LeaseTTL/20, time.Millisecond))
	defer watch.Stop()
	for {
		select {
		case <-beat.C:
			w.heartbeat(ctx)
		case <-watch.C:
			w.expireUntrusted()
		case <-ctx.Done():
			return
		}
	}
}

// heartbeat sends one heartbeat for every running attempt, giving up when
// the earliest trust window ends.
func (w *Worker) heartbeat(ctx context.Context) {
	w.mu.Lock()
	sent := make(map[int64]JobRef, len(w.active))
	refs := make([]JobRef, 0, len(w.active))
	var earliest time.Time
	now := w.c.now()
	for _, a := range w.active {
		sent[a.ref.ID] = a.ref
		refs = append(refs, a.ref)
		// An attempt whose trust already ran out (cancelled, its handler
		// not yet returned) must not cut the others' heartbeat short.
		if a.trustedUntil.After(now) && (earliest.IsZero() || a.trustedUntil.Before(earliest)) {
			earliest = a.trustedUntil
		}
	}
	w.mu.Unlock()
	if len(refs) == 0 {
		return
	}
	start := w.c.now()
	timeout := w.cfg.HeartbeatEvery
	if !earliest.IsZero() {
		timeout = max(earliest.Sub(start), time.Millisecond)
	}
	hctx, cancel := context.WithTimeout(ctx, timeout)
	res, err := w.c.HeartbeatJobs(hctx, refs, w.cfg.LeaseTTL)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("fenced: heartbeat failed", "jobs", len(refs), "err", err)
		}
		w.expireUntrusted()
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// Act only on the attempt the heartbeat carried: a newer attempt of the
	// same job may have been claimed meanwhile.
	current := func(id int64) *activeJob {
		if a := w.active[id]; a != nil && a.ref == sent[id] {
			return a
		}
		return nil
	}
	for _, id := range res.Extended {
		if a := current(id); a != nil {
			a.trustedUntil = start.Add(w.trustFor())
		}
	}
	for _, id := range res.Lost {
		if a := current(id); a != nil {
			a.lost = true
			a.cancel(ErrJobLost)
		}
	}
	for _, id := range res.CancelRequested {
		if a := current(id); a != nil {
			a.cancel(ErrJobCancelled)
		}
	}
}

// expireUntrusted cancels attempts whose trust window ran out.
func (w *Worker) expireUntrusted() {
	now := w.c.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range w.active {
		if now.After(a.trustedUntil) {
			a.cancel(ErrJobLost)
		}
	}
}
