package fenced

import (
	"time"

	"github.com/fenced/fenced/driver"
)

// Hand-off (docs/design.md §6.18): when a worker's completion of a
// workflow's task releases a dependent that this worker would claim next
// (its queue, one of its kinds, nothing holding it back), the statement
// that records the completion starts the dependent's first attempt for
// this worker, and the slot the completed attempt leaves runs it at once:
// one write of the dependent's row between pending and running instead of
// a release and a claim. The dependent is fenced as a claimed attempt is
// (its own fence, its lease from before the statement, heartbeats) and the
// hand-off is never a way around a queue's pause or limits.

// handedTask is an attempt handed to a completion, tracked by the worker.
type handedTask struct {
	job    *Job
	active *activeJob
}

// handoff is the hand-off the worker's completions ask for, or nil when
// it hands off nothing: turned off (WorkerConfig.NoHandoff), stopping (a
// stopping worker takes no more work), or without kinds.
func (w *Worker) handoff() *driver.Handoff {
	if w.cfg.NoHandoff || len(w.kinds) == 0 {
		return nil
	}
	select {
	case <-w.stopFetch:
		return nil
	default:
	}
	return &driver.Handoff{Owner: w.cfg.Owner, TTL: w.cfg.LeaseTTL, Kinds: w.kinds}
}

// takeHanded counts and tracks an attempt handed to a completion this
// worker wrote (sent: when the statement was sent, the start of its
// trust). It is called by the run that completed, before that run ends, so
// that Stop's wait never sees the worker with no job in between.
func (w *Worker) takeHanded(j *Job, sent time.Time) *handedTask {
	w.stats.claimed.Add(1)
	w.stats.handedOff.Add(1)
	w.jobsWG.Add(1)
	return &handedTask{job: j, active: w.track(j, sent)}
}

// maxSpare is the most spare slots a batch of completions holds in one
// queue: a claim's most.
const maxSpare = MaxClaimBatch

// holdSpare takes, for a batch of completions that hands off, the free
// slots of each queue a task in it completes in (at most maxSpare each), so
// that the statement may start as many released tasks there beyond the one
// each completion's slot runs (a fan-out's split releases all its parts at
// once). The slots are the queue's claims' own: held for the statement
// only, they are given back by releaseSpare, but for those the attempts
// handed to them run in. A queue whose last claim filled its slots (it has
// more work queued) keeps them for its claims: its released tasks are
// queued behind that work.
func (w *Worker) holdSpare(batch []endRequest) map[string]int {
	var spare map[string]int
	for _, r := range batch {
		if !r.completesTask() {
			continue
		}
		qs := w.queues[r.queue]
		if _, seen := spare[r.queue]; seen || qs == nil || !qs.drained.Load() {
			continue
		}
		if spare == nil {
			spare = map[string]int{}
		}
		n := 0
	hold:
		for n < maxSpare {
			select {
			case qs.tokens <- struct{}{}:
				n++
			default:
				break hold
			}
		}
		spare[r.queue] = n
	}
	return spare
}

// releaseSpare gives back the spare slots no attempt was handed to.
func (w *Worker) releaseSpare(spare map[string]int) {
	for q, n := range spare {
		for range n {
			<-w.queues[q].tokens
		}
	}
}
