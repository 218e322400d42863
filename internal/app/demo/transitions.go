package demo

import (
	"context"
	"fmt"
	"time"
)

// transitions: one worker walks a job through its life and tries each
// change a second time. Claim, then claim again (nothing: the job is running,
// not queued); complete, then complete again (stale: the attempt is no longer
// running); cancel (refused: finished). The job ends succeeded after one
// attempt. Every refusal is a typed answer, never a silent success.
func transitions(ctx context.Context, e *env) []Step {
	var t timeline
	q := e.queue("transitions")
	j, err := enqueue(ctx, e.c, q)
	if err != nil {
		t.fail("—", "enqueue a job", "queued", err)
		return t.steps
	}
	t.add("—", "enqueue a job", "queued", string(j.State))
	f := j.Fence + 1 // the first claim's fence

	jobs, err := e.c.ClaimJobs(ctx, q, "W", 1, time.Minute)
	t.add("W", "claim ✓", fmt.Sprintf("job %d, fence %d", j.ID, f), claimed(jobs, err))
	if len(jobs) != 1 {
		return t.steps
	}
	ref := jobs[0].Ref()
	jobs, err = e.c.ClaimJobs(ctx, q, "W", 1, time.Minute)
	t.add("W", "claim again ✗ (the job is running, not queued)", "nothing", claimed(jobs, err))

	err = e.c.CompleteJob(ctx, ref, map[string]string{"result": "done"})
	t.add("W", fmt.Sprintf("complete with fence %d ✓", f), "accepted", jobOutcome(err))
	err = e.c.CompleteJob(ctx, ref, map[string]string{"result": "twice"})
	t.add("W", fmt.Sprintf("complete again with fence %d ✗", f),
		fmt.Sprintf("rejected: stale (not_running, current fence %d)", f), jobOutcome(err))
	_, err = e.c.CancelJob(ctx, j.ID)
	t.add("—", "cancel ✗", "refused: finished (succeeded)", jobOutcome(err))

	t.add("—", "read the job", fmt.Sprintf("succeeded, attempt 1, fence %d, owner W", f), jobState(ctx, e.c, j.ID))
	t.add("—", "its attempts", fmt.Sprintf("#1 W fence %d succeeded", f), history(ctx, e.c, j.ID))
	return t.steps
}
