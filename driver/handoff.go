package driver

import (
	"context"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

// TaskHandoff is implemented by a WorkflowDriver whose completions can hand
// a task they release to the worker that completed its dependency
// (docs/design.md §6.18, hand-off): EndJobsHandingOff is EndJobs in a
// transaction of its own, and a completion in it that releases a dependent
// may, in the same statement, start that dependent's first attempt for
// h.Owner with a lease of h.TTL instead of queueing it. A dependent is
// handed off only as a claim of its queue by h.Owner for h.Kinds would have
// started it (due, of one of the kinds, in the completed task's queue,
// without a concurrency or sequence key, its queue neither paused nor under
// a global limit), and each completion takes at most one (the slot the
// completed attempt leaves free); beyond those, the batch takes at most
// h.Spare[q] more of the dependents it releases in queue q (free slots the
// worker holds for the statement). taken[i] is the attempt handed to end
// i, or nil, and spare the others; each is a running attempt with its own
// fence, as ClaimJobs returns one. A handed-off attempt whose answer is
// lost (the statement committed, its result never arrived) runs nowhere
// until its lease runs out and recovery puts it back, as a claim's lost
// answer does.
type TaskHandoff interface {
	EndJobsHandingOff(ctx context.Context, ends []fencedtype.JobEnd, h Handoff) (errs []error, ended []fencedtype.JobEnded, taken, spare []*fencedtype.Job, err error)
}

// Handoff is who takes the tasks a batch of completions releases.
type Handoff struct {
	Owner string        // the worker's owner name, as a claim's
	TTL   time.Duration // the lease of a handed-off attempt
	Kinds []string      // the kinds the worker runs (distinct, sorted, at least one)
	// Spare is how many attempts beyond one a completion the batch may
	// start, by queue, in slots the worker holds free for them.
	Spare map[string]int
}
