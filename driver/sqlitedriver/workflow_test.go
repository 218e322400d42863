package sqlitedriver_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/sqlitedriver"
	"github.com/fenced/fenced/fencedtype"
)

// The workflows on a real SQLite file, through the Client (docs/design.md
// §6.18). Each test ends by checking every task's counters against its
// edges (wantCountersAgree): the release rule keeps them in step.

// wfLong is a lease no test outlives; wfShort one that runs out soon.
const (
	wfLong  = time.Hour
	wfShort = 50 * time.Millisecond
)

// newWorkflows opens a migrated database and a Client on it.
func newWorkflows(t *testing.T) (*fenced.Client, *sqlitedriver.Driver) {
	t.Helper()
	d := openJobs(t, filepath.Join(t.TempDir(), "wf.db"))
	return fenced.New(d, fenced.Config{}), d
}

// tk is a task of kind "k" in the default queue.
func tk(name string, deps ...string) fenced.WorkflowTaskParams {
	return fenced.WorkflowTaskParams{Name: name, Job: fenced.EnqueueParams{Kind: "k"}, DependsOn: deps}
}

func enqueueWorkflow(t *testing.T, c *fenced.Client, tasks ...fenced.WorkflowTaskParams) *fenced.Workflow {
	t.Helper()
	w, err := c.EnqueueWorkflow(context.Background(), nil, fenced.WorkflowParams{Name: "wf", Tasks: tasks})
	if err != nil {
		t.Fatalf("enqueue workflow: %v", err)
	}
	return w
}

// claimTasks claims every claimable job of queue and returns them by task
// name; each must be a task.
func claimTasks(t *testing.T, c *fenced.Client, queue string, ttl time.Duration) map[string]*fenced.Job {
	t.Helper()
	jobs, err := c.ClaimJobs(context.Background(), queue, "w", 100, ttl)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	out := map[string]*fenced.Job{}
	for _, j := range jobs {
		if j.WorkflowID == 0 || j.TaskName == "" {
			t.Fatalf("claimed job %d is no task: workflow %d, task %q", j.ID, j.WorkflowID, j.TaskName)
		}
		out[j.TaskName] = j
	}
	return out
}

// wantClaimed checks the names of the tasks claimed.
func wantClaimed(t *testing.T, got map[string]*fenced.Job, want ...string) {
	t.Helper()
	var names []string
	for n := range got {
		names = append(names, n)
	}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Fatalf("claimed tasks %v, want %v", names, want)
	}
}

// tasksOf reads workflow id's tasks by name.
func tasksOf(t *testing.T, c *fenced.Client, id int64) map[string]fenced.WorkflowTask {
	t.Helper()
	w, err := c.GetWorkflow(context.Background(), id)
	if err != nil {
		t.Fatalf("get workflow %d: %v", id, err)
	}
	out := map[string]fenced.WorkflowTask{}
	for _, k := range w.Tasks {
		out[k.Name] = k
	}
	return out
}

// wantStates checks the states of the tasks named in want.
func wantStates(t *testing.T, c *fenced.Client, id int64, want map[string]fenced.JobState) {
	t.Helper()
	got := tasksOf(t, c, id)
	for name, s := range want {
		if got[name].State != s {
			all := map[string]fenced.JobState{}
			for n, k := range got {
				all[n] = k.State
			}
			t.Fatalf("task %s is %s, want %s (all: %v)", name, got[name].State, s, all)
		}
	}
}

func complete(t *testing.T, c *fenced.Client, j *fenced.Job) {
	t.Helper()
	if err := c.CompleteJob(context.Background(), j.Ref(), map[string]string{"by": j.TaskName}); err != nil {
		t.Fatalf("complete %s: %v", j.TaskName, err)
	}
}

func wantStaleErr(t *testing.T, what string, err error) {
	t.Helper()
	var se *fenced.StaleError
	if !errors.As(err, &se) || !errors.Is(err, fenced.ErrStale) {
		t.Fatalf("%s: want a *StaleError, got %v", what, err)
	}
}

func wantInvalidErr(t *testing.T, what, field string, err error) {
	t.Helper()
	var ie *fenced.InvalidError
	if !errors.As(err, &ie) || ie.Field != field {
		t.Fatalf("%s: want an *InvalidError of %q, got %v", what, field, err)
	}
}

// recoverTask runs recovery (a tiny backoff) until job id's expired attempt
// was taken back.
func recoverTask(t *testing.T, c *fenced.Client, id int64) *fenced.Job {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := c.RecoverJobs(ctx, nil, 1000, fenced.Backoff{Base: time.Microsecond, Max: time.Microsecond}); err != nil {
			t.Fatalf("recover: %v", err)
		}
		j, _, err := c.GetJob(ctx, id)
		if err != nil {
			t.Fatalf("get job %d: %v", id, err)
		}
		if j.State != fenced.JobRunning {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d was never recovered", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// claimAgain claims queue until a job comes (a recovered job waits out its
// backoff, and the clock counts milliseconds), within a generous deadline.
func claimAgain(t *testing.T, c *fenced.Client, queue string) map[string]*fenced.Job {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if got := claimTasks(t, c, queue, wfLong); len(got) > 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing to claim again in %s", queue)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// wantCountersAgree checks every task's counters against its edges:
// deps_waiting counts its waiting edges and deps_failed its failed ones, a
// pending task has an edge waiting (or, running anyway, none failed that
// would have cancelled it), and a task cancelled by its workflow has a
// failed edge.
func wantCountersAgree(t *testing.T, d *sqlitedriver.Driver) {
	t.Helper()
	rows, err := d.DB().QueryContext(context.Background(), `
SELECT j.id, j.task_name, j.state, j.deps_waiting, j.deps_failed, j.run_anyway, j.workflow_cancelled,
    (SELECT count(*) FROM fenced_job_deps e WHERE e.job_id = j.id AND e.status = 0),
    (SELECT count(*) FROM fenced_job_deps e WHERE e.job_id = j.id AND e.status = 2)
FROM fenced_jobs j WHERE j.workflow_id IS NOT NULL`)
	if err != nil {
		t.Fatalf("read counters: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var name, state string
		var waiting, failed, edgesWaiting, edgesFailed int
		var anyway, cancelled bool
		if err := rows.Scan(&id, &name, &state, &waiting, &failed, &anyway, &cancelled, &edgesWaiting, &edgesFailed); err != nil {
			t.Fatalf("read counters: %v", err)
		}
		switch {
		case waiting != edgesWaiting || failed != edgesFailed:
			t.Errorf("task %s (job %d): deps_waiting %d, deps_failed %d; its edges: %d waiting, %d failed",
				name, id, waiting, failed, edgesWaiting, edgesFailed)
		case state == "pending" && waiting == 0:
			t.Errorf("task %s (job %d) is pending with no edge waiting", name, id)
		case state == "pending" && failed > 0 && !anyway:
			t.Errorf("task %s (job %d) is pending with a failed edge and does not run anyway", name, id)
		case cancelled && (state != "cancelled" || failed == 0):
			t.Errorf("task %s (job %d): cancelled by its workflow, but %s with %d failed edges", name, id, state, failed)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read counters: %v", err)
	}
}

// A diamond: d runs only once both b and c completed, after a; claims never
// take a pending task, and every read of a task says its workflow and name.
func TestWorkflowDiamondReleasesTheJoinAfterBothBranches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, d := newWorkflows(t)
	w := enqueueWorkflow(t, c, tk("a"), tk("b", "a"), tk("c", "a"), tk("d", "b", "c"))
	if w.Counts[fenced.JobQueued] != 1 || w.Counts[fenced.JobPending] != 3 || w.State != fenced.WorkflowRunning {
		t.Fatalf("enqueued %+v", w)
	}
	if k := w.Tasks[3]; k.Name != "d" || !slices.Equal(k.DependsOn, []string{"b", "c"}) || k.State != fenced.JobPending {
		t.Fatalf("task d = %+v", k)
	}
	if k := w.Tasks[0]; k.Name != "a" || k.DependsOn == nil || len(k.DependsOn) != 0 {
		t.Fatalf("task a = %+v", k)
	}
	j, _, err := c.GetJob(ctx, w.Tasks[3].JobID)
	if err != nil || j.WorkflowID != w.ID || j.TaskName != "d" || j.State != fenced.JobPending {
		t.Fatalf("get job d = %+v, %v", j, err)
	}
	pending, err := c.ListJobs(ctx, fenced.JobFilter{State: fenced.JobPending})
	if err != nil || len(pending) != 3 || pending[0].TaskName != "b" {
		t.Fatalf("pending jobs: %d, %v", len(pending), err)
	}
	counts, err := c.CountJobs(ctx)
	if err != nil {
		t.Fatalf("count jobs: %v", err)
	}
	if !slices.ContainsFunc(counts, func(n fenced.JobCount) bool { return n.State == fenced.JobPending && n.Count == 3 }) {
		t.Fatalf("counts %+v have no 3 pending", counts)
	}

	got := claimTasks(t, c, fenced.DefaultQueue, wfLong)
	wantClaimed(t, got, "a")
	complete(t, c, got["a"])
	bc := claimTasks(t, c, fenced.DefaultQueue, wfLong)
	wantClaimed(t, bc, "b", "c")
	complete(t, c, bc["b"])
	wantClaimed(t, claimTasks(t, c, fenced.DefaultQueue, wfLong))
	wantStates(t, c, w.ID, map[string]fenced.JobState{"d": fenced.JobPending})
	complete(t, c, bc["c"])
	last := claimTasks(t, c, fenced.DefaultQueue, wfLong)
	wantClaimed(t, last, "d")
	deps, err := c.TaskDependencies(ctx, last["d"].ID)
	if err != nil || len(deps) != 2 || deps[0].Name != "b" || deps[1].Name != "c" || string(deps[1].Output) != `{"by":"c"}` {
		t.Fatalf("dependencies of d = %+v, %v", deps, err)
	}
	complete(t, c, last["d"])
	if got, _ := c.GetWorkflow(ctx, w.ID); got.State != fenced.WorkflowSucceeded {
		t.Fatalf("workflow is %s, want succeeded", got.State)
	}
	wantCountersAgree(t, d)
}

// A stale attempt of b, recovered after its lease ran out and claimed
// again, cannot complete it and releases nothing: not while b is queued,
// not while the new attempt runs. Its late failure cancels nothing.
func TestWorkflowStaleAttemptReleasesNothing(t *testing.T) {
	t.Parallel()
	c, d := newWorkflows(t)
	b := tk("b", "a")
	b.Job.Queue = "slow" // claimed alone, with a short lease
	w := enqueueWorkflow(t, c, tk("a"), b, tk("c", "a"), tk("d", "b", "c"))
	complete(t, c, claimTasks(t, c, fenced.DefaultQueue, wfLong)["a"])
	stale := claimTasks(t, c, "slow", wfShort)["b"]
	complete(t, c, claimTasks(t, c, fenced.DefaultQueue, wfLong)["c"])
	recoverTask(t, c, stale.ID)

	wantStaleErr(t, "stale complete of a queued b", c.CompleteJob(context.Background(), stale.Ref(), nil))
	wantStates(t, c, w.ID, map[string]fenced.JobState{"b": fenced.JobQueued, "d": fenced.JobPending})
	current := claimAgain(t, c, "slow")["b"]
	if current.Fence <= stale.Fence {
		t.Fatalf("re-claimed with fence %d, not above %d", current.Fence, stale.Fence)
	}
	wantStaleErr(t, "stale complete of a running b", c.CompleteJob(context.Background(), stale.Ref(), nil))
	wantStaleErr(t, "stale failure of a running b", c.FailJob(context.Background(), stale.Ref(), "late", 0, true))
	wantStates(t, c, w.ID, map[string]fenced.JobState{"b": fenced.JobRunning, "d": fenced.JobPending})
	wantClaimed(t, claimTasks(t, c, fenced.DefaultQueue, wfLong))
	wantCountersAgree(t, d)

	complete(t, c, current)
	wantStaleErr(t, "stale failure of a succeeded b", c.FailJob(context.Background(), stale.Ref(), "late", 0, true))
	wantClaimed(t, claimTasks(t, c, fenced.DefaultQueue, wfLong), "d")
	wantCountersAgree(t, d)
}

// b failing for good cancels d, which needs it, and e, which needs d; f,
// which runs anyway, is queued and sees why. A task its workflow
// cancelled is not retried alone; c failing too later changes nothing
// more (d's own edges failed already, and are not failed twice).
func TestWorkflowFailureCancelsDependentsAndRunAnywayRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, d := newWorkflows(t)
	f := tk("f", "b")
	f.RunAnyway = true
	w := enqueueWorkflow(t, c, tk("a"), tk("b", "a"), tk("c", "a"), tk("d", "b", "c"), tk("e", "d"), f)
	complete(t, c, claimTasks(t, c, fenced.DefaultQueue, wfLong)["a"])
	bc := claimTasks(t, c, fenced.DefaultQueue, wfLong)
	if err := c.FailJob(ctx, bc["b"].Ref(), "boom", 0, true); err != nil {
		t.Fatalf("fail b: %v", err)
	}
	wantStates(t, c, w.ID, map[string]fenced.JobState{"b": fenced.JobFailed, "c": fenced.JobRunning,
		"d": fenced.JobCancelled, "e": fenced.JobCancelled, "f": fenced.JobQueued})
	tasks := tasksOf(t, c, w.ID)
	for name, k := range tasks {
		if k.CancelledByWorkflow != (name == "d" || name == "e") {
			t.Errorf("task %s: cancelled by its workflow = %v", name, k.CancelledByWorkflow)
		}
	}
	dj, _, err := c.GetJob(ctx, tasks["d"].JobID)
	if err != nil || dj.LastError != driver.TaskCancelError || dj.FinishedAt == nil {
		t.Fatalf("d = %+v, %v", dj, err)
	}
	_, err = c.RetryJob(ctx, tasks["d"].JobID)
	wantInvalidErr(t, "retry of d", "job", err)

	got := claimTasks(t, c, fenced.DefaultQueue, wfLong)
	wantClaimed(t, got, "f")
	deps, err := c.TaskDependencies(ctx, got["f"].ID)
	if err != nil || len(deps) != 1 || deps[0].State != fenced.JobFailed || deps[0].Error != "boom" || deps[0].Output != nil {
		t.Fatalf("dependencies of f = %+v, %v", deps, err)
	}
	complete(t, c, got["f"])
	if err := c.FailJob(ctx, bc["c"].Ref(), "boom too", 0, true); err != nil {
		t.Fatalf("fail c: %v", err)
	}
	wantStates(t, c, w.ID, map[string]fenced.JobState{"d": fenced.JobCancelled, "e": fenced.JobCancelled})
	if wf, _ := c.GetWorkflow(ctx, w.ID); wf.State != fenced.WorkflowFailed {
		t.Fatalf("workflow is %s, want failed", wf.State)
	}
	wantCountersAgree(t, d)
}

// Recovery failing a task for good (its attempts exhausted) and a
// recovered task asked to cancel both cancel their dependents, in
// recovery's transaction.
func TestWorkflowRecoveryFinishingATaskCancelsItsDependents(t *testing.T) {
	t.Parallel()
	c, d := newWorkflows(t)
	a := tk("a")
	a.Job.MaxAttempts = 1
	w := enqueueWorkflow(t, c, a, tk("b", "a"), tk("x"), tk("y", "x"))
	got := claimTasks(t, c, fenced.DefaultQueue, wfShort)
	wantClaimed(t, got, "a", "x")
	if _, err := c.CancelJob(context.Background(), got["x"].ID); err != nil {
		t.Fatalf("cancel x: %v", err)
	}
	recoverTask(t, c, got["a"].ID)
	recoverTask(t, c, got["x"].ID)
	wantStates(t, c, w.ID, map[string]fenced.JobState{"a": fenced.JobFailed, "b": fenced.JobCancelled,
		"x": fenced.JobCancelled, "y": fenced.JobCancelled})
	wantCountersAgree(t, d)
}

// Retrying b, which failed for good, puts d (cancelled by its workflow)
// back to pending; d is released once b, and then c, completed.
func TestWorkflowRetryPutsTheDependentBackToPending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, d := newWorkflows(t)
	w := enqueueWorkflow(t, c, tk("a"), tk("b", "a"), tk("c", "a"), tk("d", "b", "c"))
	complete(t, c, claimTasks(t, c, fenced.DefaultQueue, wfLong)["a"])
	bc := claimTasks(t, c, fenced.DefaultQueue, wfLong)
	if err := c.FailJob(ctx, bc["b"].Ref(), "boom", 0, true); err != nil {
		t.Fatalf("fail b: %v", err)
	}
	wantStates(t, c, w.ID, map[string]fenced.JobState{"d": fenced.JobCancelled})
	r, err := c.RetryJob(ctx, bc["b"].ID)
	if err != nil || r.State != fenced.JobQueued || r.WorkflowID != w.ID || r.TaskName != "b" {
		t.Fatalf("retry b = %+v, %v", r, err)
	}
	wantStates(t, c, w.ID, map[string]fenced.JobState{"b": fenced.JobQueued, "c": fenced.JobRunning, "d": fenced.JobPending})
	dj, _, _ := c.GetJob(ctx, w.Tasks[3].JobID)
	if dj.FinishedAt != nil || dj.LastError != "" || tasksOf(t, c, w.ID)["d"].CancelledByWorkflow {
		t.Fatalf("d back to pending = %+v", dj)
	}
	wantCountersAgree(t, d)
	b := claimTasks(t, c, fenced.DefaultQueue, wfLong)
	wantClaimed(t, b, "b")
	complete(t, c, b["b"])
	wantStates(t, c, w.ID, map[string]fenced.JobState{"d": fenced.JobPending})
	complete(t, c, bc["c"])
	wantClaimed(t, claimTasks(t, c, fenced.DefaultQueue, wfLong), "d")
	wantCountersAgree(t, d)
}

// One batch of ends that completes y and fails x for good: z, which needs
// both, is cancelled, and zz, which runs anyway, is queued; a stale end in
// the batch changes nothing.
func TestWorkflowBatchEndCountsTheFailureFirst(t *testing.T) {
	t.Parallel()
	c, d := newWorkflows(t)
	zz := tk("zz", "x", "y")
	zz.RunAnyway = true
	w := enqueueWorkflow(t, c, tk("x"), tk("y"), tk("z", "x", "y"), zz, tk("s"), tk("after-s", "s"))
	got := claimTasks(t, c, fenced.DefaultQueue, wfLong)
	wantClaimed(t, got, "s", "x", "y")
	staleRef := got["s"].Ref()
	staleRef.Fence++ // no attempt of s has this fence
	errs, _, err := c.EndJobs(context.Background(), nil, []fenced.JobEnd{
		{Ref: got["y"].Ref(), Kind: fenced.EndComplete},
		{Ref: got["x"].Ref(), Kind: fenced.EndFail, Error: "boom", Discard: true},
		{Ref: staleRef, Kind: fenced.EndComplete},
	})
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("end batch: %v %v", errs, err)
	}
	if errs[2] == nil {
		t.Fatal("an end of a fence s never had was taken")
	}
	wantStates(t, c, w.ID, map[string]fenced.JobState{"x": fenced.JobFailed, "y": fenced.JobSucceeded,
		"z": fenced.JobCancelled, "zz": fenced.JobQueued, "s": fenced.JobRunning, "after-s": fenced.JobPending})
	wantCountersAgree(t, d)
}

// Cancelling the head of a chain of 1,000 tasks cancels every one, in the
// cancel's transaction; retrying the head runs back down the chain.
func TestWorkflowCancelRunsDownAChainOf1000(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, d := newWorkflows(t)
	const n = 1000
	tasks := []fenced.WorkflowTaskParams{tk("t0")}
	for i := 1; i < n; i++ {
		tasks = append(tasks, tk(fmt.Sprintf("t%d", i), fmt.Sprintf("t%d", i-1)))
	}
	w := enqueueWorkflow(t, c, tasks...)
	if _, err := c.CancelJob(ctx, w.Tasks[0].JobID); err != nil {
		t.Fatalf("cancel the head: %v", err)
	}
	wf, err := c.GetWorkflow(ctx, w.ID)
	if err != nil || wf.Counts[fenced.JobCancelled] != n || wf.State != fenced.WorkflowFailed {
		t.Fatalf("after the head's cancel: %v, %v", wf.Counts, err)
	}
	for _, k := range wf.Tasks {
		if k.CancelledByWorkflow != (k.Name != "t0") {
			t.Fatalf("task %s: cancelled by its workflow = %v", k.Name, k.CancelledByWorkflow)
		}
	}
	wantCountersAgree(t, d)
	if _, err := c.RetryJob(ctx, w.Tasks[0].JobID); err != nil {
		t.Fatalf("retry the head: %v", err)
	}
	wf, err = c.GetWorkflow(ctx, w.ID)
	if err != nil || wf.Counts[fenced.JobQueued] != 1 || wf.Counts[fenced.JobPending] != n-1 {
		t.Fatalf("after the head's retry: %v, %v", wf.Counts, err)
	}
	wantCountersAgree(t, d)
}

// AddWorkflowTasks by a stale attempt, recovered and then claimed again,
// adds nothing; the current attempt adds, and a dependency on a name the
// workflow does not have, or a name it has, is refused with nothing
// written. New tasks on finished dependencies count them as finished.
func TestWorkflowStaleAttemptCannotAddTasks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, d := newWorkflows(t)
	split := tk("split")
	split.Job.Queue = "slow"
	// ok and bad have dependents already: an addition resolves only its
	// own new edges on them.
	w := enqueueWorkflow(t, c, split, tk("ok"), tk("bad"), tk("ok-0", "ok"), tk("bad-0", "bad"))
	stale := claimTasks(t, c, "slow", wfShort)["split"]
	others := claimTasks(t, c, fenced.DefaultQueue, wfLong)
	complete(t, c, others["ok"])
	wantClaimed(t, claimTasks(t, c, fenced.DefaultQueue, wfLong), "ok-0")
	if err := c.FailJob(ctx, others["bad"].Ref(), "no", 0, true); err != nil {
		t.Fatalf("fail bad: %v", err)
	}
	recoverTask(t, c, stale.ID)
	_, err := c.AddWorkflowTasks(ctx, nil, stale.Ref(), []fenced.WorkflowTaskParams{tk("late", "split")})
	wantStaleErr(t, "add by an attempt recovered", err)
	current := claimAgain(t, c, "slow")["split"]
	_, err = c.AddWorkflowTasks(ctx, nil, stale.Ref(), []fenced.WorkflowTaskParams{tk("late", "split")})
	wantStaleErr(t, "add by a superseded attempt", err)
	err = c.JobTx(ctx, stale.Ref(), func(tx fenced.Tx) error {
		_, err := c.AddWorkflowTasks(ctx, tx, stale.Ref(), []fenced.WorkflowTaskParams{tk("late", "split")})
		return err
	})
	wantStaleErr(t, "add in a superseded attempt's JobTx", err)
	_, err = c.AddWorkflowTasks(ctx, nil, current.Ref(), []fenced.WorkflowTaskParams{tk("x"), tk("y", "x", "nope")})
	wantInvalidErr(t, "add on an unknown name", "tasks", err)
	_, err = c.AddWorkflowTasks(ctx, nil, current.Ref(), []fenced.WorkflowTaskParams{tk("x"), tk("ok")})
	wantInvalidErr(t, "add of a name taken", "task name", err)
	if got := tasksOf(t, c, w.ID); len(got) != 5 {
		t.Fatalf("refused additions wrote tasks: %v", got)
	}

	wf, err := c.AddWorkflowTasks(ctx, nil, current.Ref(), []fenced.WorkflowTaskParams{
		tk("after-ok", "ok"), tk("after-bad", "bad"), tk("after-after-bad", "after-bad"),
		tk("after-split", "split", "ok"), tk("free")})
	if err != nil || len(wf.Tasks) != 10 {
		t.Fatalf("add by the current attempt: %+v, %v", wf, err)
	}
	wantStates(t, c, w.ID, map[string]fenced.JobState{"after-ok": fenced.JobQueued, "after-bad": fenced.JobCancelled,
		"after-after-bad": fenced.JobCancelled, "after-split": fenced.JobPending, "free": fenced.JobQueued})
	wantCountersAgree(t, d)
	complete(t, c, current)
	wantClaimed(t, claimTasks(t, c, fenced.DefaultQueue, wfLong), "after-ok", "after-split", "free")
	wantStates(t, c, w.ID, map[string]fenced.JobState{"bad-0": fenced.JobCancelled})
	wantCountersAgree(t, d)
}

// Cancelling a workflow cancels its pending and queued tasks and asks the
// running one to stop; its cancelled end finishes the workflow cancelled.
// Retrying the workflow runs again what the cancel stopped, in rounds (b,
// cancelled with the workflow, has a failed edge until a is retried), and
// deleting it leaves no task, attempt or edge.
func TestWorkflowCancelRetryAndDeleteWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, d := newWorkflows(t)
	w := enqueueWorkflow(t, c, tk("a"), tk("b", "a"), tk("c", "b"), tk("x"))
	got := claimTasks(t, c, fenced.DefaultQueue, wfLong)
	wantClaimed(t, got, "a", "x")
	complete(t, c, got["x"])
	wf, err := c.CancelWorkflow(ctx, w.ID)
	if err != nil || wf.CancelledAt == nil || wf.State != fenced.WorkflowRunning {
		t.Fatalf("cancel workflow = %+v, %v", wf, err)
	}
	wantStates(t, c, w.ID, map[string]fenced.JobState{"a": fenced.JobRunning, "b": fenced.JobCancelled, "c": fenced.JobCancelled})
	if _, err := c.EndJob(ctx, nil, fenced.JobEnd{Ref: got["a"].Ref(), Kind: fenced.EndCancel, Error: "stopped"}); err != nil {
		t.Fatalf("end a cancelled: %v", err)
	}
	if wf, _ := c.GetWorkflow(ctx, w.ID); wf.State != fenced.WorkflowCancelled {
		t.Fatalf("workflow is %s, want cancelled", wf.State)
	}
	wantCountersAgree(t, d)
	wf, err = c.RetryWorkflow(ctx, w.ID)
	if err != nil || wf.CancelledAt != nil {
		t.Fatalf("retry workflow = %+v, %v", wf, err)
	}
	wantStates(t, c, w.ID, map[string]fenced.JobState{"a": fenced.JobQueued, "b": fenced.JobPending,
		"c": fenced.JobPending, "x": fenced.JobSucceeded})
	wantCountersAgree(t, d)
	if _, err := c.CancelWorkflow(ctx, w.ID+1000); !errors.Is(err, fenced.ErrNotFound) {
		t.Fatalf("cancel of no workflow: %v", err)
	}

	if err := c.DeleteWorkflow(ctx, w.ID); err != nil {
		t.Fatalf("delete workflow: %v", err)
	}
	var left int
	if err := d.DB().QueryRowContext(ctx, `SELECT (SELECT count(*) FROM fenced_jobs) + (SELECT count(*) FROM fenced_job_attempts)
		+ (SELECT count(*) FROM fenced_job_deps) + (SELECT count(*) FROM fenced_workflows)`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d rows left after deleting the workflow (%v)", left, err)
	}
	if err := c.DeleteWorkflow(ctx, w.ID); !errors.Is(err, fenced.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

// Listings page workflows by id, either way, filtered by name, with their
// counts and without their tasks.
func TestWorkflowListFiltersByName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := newWorkflows(t)
	var ids []int64
	for _, name := range []string{"x", "y", "x", "x"} {
		w, err := c.EnqueueWorkflow(ctx, nil, fenced.WorkflowParams{Name: name, Tasks: []fenced.WorkflowTaskParams{tk("a"), tk("b", "a")}})
		if err != nil {
			t.Fatalf("enqueue: %v", err)
		}
		ids = append(ids, w.ID)
	}
	for _, tc := range []struct {
		f    fenced.WorkflowFilter
		want []int64
	}{
		{fenced.WorkflowFilter{}, ids},
		{fenced.WorkflowFilter{Name: "x"}, []int64{ids[0], ids[2], ids[3]}},
		{fenced.WorkflowFilter{Name: "x", Desc: true, Limit: 2}, []int64{ids[3], ids[2]}},
		{fenced.WorkflowFilter{Name: "x", AfterID: ids[0], BeforeID: ids[3]}, []int64{ids[2]}},
		{fenced.WorkflowFilter{Name: "y", Desc: true}, []int64{ids[1]}},
		{fenced.WorkflowFilter{Name: "z"}, nil},
	} {
		ws, err := c.ListWorkflows(ctx, tc.f)
		if err != nil {
			t.Fatalf("list %+v: %v", tc.f, err)
		}
		var got []int64
		for _, w := range ws {
			got = append(got, w.ID)
			if w.Tasks != nil || w.Counts[fenced.JobQueued] != 1 || w.Counts[fenced.JobPending] != 1 || w.State != fenced.WorkflowRunning {
				t.Fatalf("listed %+v", w)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("list %+v = %v, want %v", tc.f, got, tc.want)
		}
	}
}

// A task is never deleted alone; retention deletes a workflow whole (its
// row, tasks, their attempts and edges) once every task finished, and
// counts its tasks among the jobs it deleted.
func TestWorkflowRetentionDeletesWholeWorkflows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, d := newWorkflows(t)
	done := enqueueWorkflow(t, c, tk("a"), tk("b", "a"), tk("c", "b"))
	running := enqueueWorkflow(t, c, tk("p"), tk("q", "p"))
	plain, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "plain", Queue: "plain"})
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	got := claimTasks(t, c, fenced.DefaultQueue, wfLong)
	wantClaimed(t, got, "a", "p")
	if err := c.FailJob(ctx, got["a"].Ref(), "once", 0, true); err != nil { // an attempt in the history
		t.Fatalf("fail a: %v", err)
	}
	var ie *fenced.InvalidError
	if err := c.DeleteJob(ctx, got["a"].ID); !errors.As(err, &ie) {
		t.Fatalf("delete of a task: %v, want an *InvalidError", err)
	}
	complete(t, c, got["p"]) // q pending: running stays
	pj, err := c.ClaimJobs(ctx, "plain", "w", 1, wfLong)
	if err != nil || len(pj) != 1 || pj[0].ID != plain.ID {
		t.Fatalf("claim plain: %v, %v", pj, err)
	}
	complete(t, c, pj[0])
	time.Sleep(2 * time.Millisecond) // the clock counts milliseconds

	n, err := c.DeleteFinishedJobs(ctx, nil, 0, 100)
	if err != nil || n != 4 {
		t.Fatalf("retention deleted %d, %v; want the plain job and the 3 tasks", n, err)
	}
	if _, err := c.GetWorkflow(ctx, done.ID); !errors.Is(err, fenced.ErrNotFound) {
		t.Fatalf("the finished workflow: %v, want ErrNotFound", err)
	}
	if _, err := c.GetWorkflow(ctx, running.ID); err != nil {
		t.Fatalf("the running workflow: %v", err)
	}
	var edges, attempts int
	ids := fmt.Sprintf("(%d, %d, %d)", done.Tasks[0].JobID, done.Tasks[1].JobID, done.Tasks[2].JobID)
	if err := d.DB().QueryRowContext(ctx, `SELECT (SELECT count(*) FROM fenced_job_deps WHERE job_id IN `+ids+` OR dep_id IN `+ids+`),
		(SELECT count(*) FROM fenced_job_attempts WHERE job_id IN `+ids+`)`).Scan(&edges, &attempts); err != nil || edges != 0 || attempts != 0 {
		t.Fatalf("left %d edges and %d attempts of the deleted workflow (%v)", edges, attempts, err)
	}

	// Two finished workflows of 3 tasks, a limit of 4: one goes whole, then
	// the other.
	for range 2 {
		enqueueWorkflow(t, c, tk("a"), tk("b", "a"), tk("c", "b"))
		if _, err := c.CancelJob(ctx, tasksOfLast(t, c)); err != nil {
			t.Fatalf("cancel: %v", err)
		}
	}
	time.Sleep(2 * time.Millisecond)
	for i, want := range []int{3, 3, 0} {
		if n, err := c.DeleteFinishedJobs(ctx, nil, 0, 4); err != nil || n != want {
			t.Fatalf("retention pass %d deleted %d, %v; want %d", i, n, err, want)
		}
	}
	wantCountersAgree(t, d)
}

// tasksOfLast is the job id of the first task of the newest workflow.
func tasksOfLast(t *testing.T, c *fenced.Client) int64 {
	t.Helper()
	ws, err := c.ListWorkflows(context.Background(), fenced.WorkflowFilter{Desc: true, Limit: 1})
	if err != nil || len(ws) != 1 {
		t.Fatalf("list workflows: %v, %v", ws, err)
	}
	w, err := c.GetWorkflow(context.Background(), ws[0].ID)
	if err != nil {
		t.Fatalf("get workflow: %v", err)
	}
	return w.Tasks[0].JobID
}

// lastBeforeWorkflows is the schema version before migration 15.
const lastBeforeWorkflows = 14

// jobColumnsOf14 are the columns of the jobs table at version 14.
const jobColumnsOf14 = `id, kind, queue, args, priority, state, run_at_us, attempt, max_attempts, fence, owner,
    lease_expires_us, cancel_requested, output, last_error, progress, idempotency_key,
    created_us, updated_us, attempted_us, finished_us, concurrency_key, sequence_key, sequence_continue_on_failed,
    metadata, tags, unique_key, unique_bucket, unique_states, policy`

// TestWorkflowMigrationKeepsEveryJob: a database of version 14 holding jobs
// in every state, with attempts and a sequence past the largest id, is
// migrated to workflows. Every row and attempt is as it was, the new
// columns hold their defaults, every index is as it was, the id sequence
// goes on, integrity and foreign keys check out, and a job running across
// the migration completes; then a workflow runs.
func TestWorkflowMigrationKeepsEveryJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v14.db")
	d, err := sqlitedriver.Open(ctx, path)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer d.Close()
	if _, err := d.MigrateTo(ctx, lastBeforeWorkflows); err != nil {
		t.Fatalf("migrate to %d: %v", lastBeforeWorkflows, err)
	}
	// The driver of today reads the task's columns: they are there while
	// the jobs are written, then dropped, leaving the table of version 14.
	for _, col := range workflowColumns {
		if _, err := d.DB().ExecContext(ctx, `ALTER TABLE fenced_jobs ADD COLUMN `+col); err != nil {
			t.Fatalf("add %s: %v", col, err)
		}
	}
	jobsInEveryState(t, d)
	enqueue(t, d, newJob("across"))
	across := claim(t, d, "across", "w1", 1, time.Hour)[0]
	for _, col := range workflowColumns {
		name := strings.Fields(col)[0]
		if _, err := d.DB().ExecContext(ctx, `ALTER TABLE fenced_jobs DROP COLUMN `+name); err != nil {
			t.Fatalf("drop %s: %v", name, err)
		}
	}
	before := schemaAndRows(t, d.DB())
	rowsBefore := readRows(t, d, `SELECT `+jobColumnsOf14+` FROM fenced_jobs ORDER BY id`)
	attemptsBefore := readRows(t, d, `SELECT * FROM fenced_job_attempts ORDER BY job_id, attempt`)
	var seq int64
	if err := d.DB().QueryRowContext(ctx, `SELECT seq FROM sqlite_sequence WHERE name = 'fenced_jobs'`).Scan(&seq); err != nil {
		t.Fatalf("sequence: %v", err)
	}

	applied, err := d.Migrate(ctx)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if !slices.Equal(applied, []int{lastBeforeWorkflows + 1}) {
		t.Fatalf("migrate applied %v", applied)
	}
	after := schemaAndRows(t, d.DB())
	for name, want := range before {
		if name == "table fenced_jobs" || strings.HasPrefix(name, "row ") || strings.HasPrefix(name, "columns ") {
			continue // compared below
		}
		if got := after[name]; got != want {
			t.Errorf("%s changed:\nbefore %s\nafter  %s", name, want, got)
		}
	}
	if got := readRows(t, d, `SELECT `+jobColumnsOf14+` FROM fenced_jobs ORDER BY id`); !slices.Equal(got, rowsBefore) {
		t.Errorf("jobs changed:\nbefore %v\nafter  %v", rowsBefore, got)
	}
	if got := readRows(t, d, `SELECT * FROM fenced_job_attempts ORDER BY job_id, attempt`); !slices.Equal(got, attemptsBefore) {
		t.Errorf("attempts changed:\nbefore %v\nafter  %v", attemptsBefore, got)
	}
	var odd int
	if err := d.DB().QueryRowContext(ctx, `SELECT count(*) FROM fenced_jobs WHERE workflow_id IS NOT NULL OR task_name IS NOT NULL
		OR deps_waiting <> 0 OR deps_failed <> 0 OR run_anyway OR workflow_cancelled`).Scan(&odd); err != nil || odd != 0 {
		t.Errorf("%d jobs with task columns set after migrating (%v)", odd, err)
	}
	for _, name := range workflowObjects {
		if _, ok := after[name]; !ok {
			t.Errorf("migrating made no %s", name)
		}
	}
	wantNullSafeJSONChecks(t, d.DB())
	wantIntegrityOK(t, d.DB())

	// The attempt running across the migration ends; new ids go on.
	if errs := endJobs(t, d, fencedtype.JobEnd{Ref: across.Ref(), Kind: fencedtype.EndComplete}); errs[0] != nil {
		t.Fatalf("complete the job running across the migration: %v", errs[0])
	}
	c := fenced.New(d, fenced.Config{})
	w := enqueueWorkflow(t, c, tk("a"), tk("b", "a"))
	if w.Tasks[0].JobID <= seq {
		t.Errorf("a task enqueued after migrating got id %d, not above the sequence %d", w.Tasks[0].JobID, seq)
	}
	complete(t, c, claimTasks(t, c, fenced.DefaultQueue, wfLong)["a"])
	wantClaimed(t, claimTasks(t, c, fenced.DefaultQueue, wfLong), "b")
	wantCountersAgree(t, d)
	if err := d.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	cliIntegrityOK(t, path)
}

// readRows reads every row of query, each shown as one string.
func readRows(t *testing.T, d *sqlitedriver.Driver, query string) []string {
	t.Helper()
	rows, err := d.DB().QueryContext(context.Background(), query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		out = append(out, showRow(vals))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no rows", query)
	}
	return out
}
