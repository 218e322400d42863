package drivertest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// task is a workflow task of kind "k" in the default queue.
func task(name string, deps ...string) fenced.WorkflowTaskParams {
	return fenced.WorkflowTaskParams{Name: name, Job: fenced.EnqueueParams{Kind: "k"}, DependsOn: deps}
}

func (e *env) workflow(t *testing.T, tasks ...fenced.WorkflowTaskParams) *fenced.Workflow {
	t.Helper()
	w, err := e.c.EnqueueWorkflow(ctx(t), nil, fenced.WorkflowParams{Name: "w", Tasks: tasks})
	wantNoErr(t, err, "enqueue workflow")
	return w
}

// taskStates reads workflow id's tasks' states by name.
func (e *env) taskStates(t *testing.T, id int64) map[string]fenced.JobState {
	t.Helper()
	w, err := e.c.GetWorkflow(ctx(t), id)
	wantNoErr(t, err, "get workflow")
	out := map[string]fenced.JobState{}
	for _, k := range w.Tasks {
		out[k.Name] = k.State
	}
	return out
}

// wantTaskStates checks the states of the tasks named in want.
func (e *env) wantTaskStates(t *testing.T, id int64, want map[string]fenced.JobState) {
	t.Helper()
	got := e.taskStates(t, id)
	for name, s := range want {
		if got[name] != s {
			t.Fatalf("task %s is %s, want %s (all: %v)", name, got[name], s, got)
		}
	}
}

// claimTasks claims every claimable job of the default queue and returns
// them by task name.
func (e *env) claimTasks(t *testing.T, owner string, ttl time.Duration) map[string]*fenced.Job {
	t.Helper()
	out := map[string]*fenced.Job{}
	for _, j := range e.claim(t, fenced.DefaultQueue, owner, 100, ttl) {
		if j.TaskName == "" || j.WorkflowID == 0 {
			t.Fatalf("claimed job %d has no task (workflow %d, task %q)", j.ID, j.WorkflowID, j.TaskName)
		}
		out[j.TaskName] = j
	}
	return out
}

func taskNames(m map[string]*fenced.Job) []string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func wantClaimed(t *testing.T, got map[string]*fenced.Job, want ...string) {
	t.Helper()
	if fmt.Sprint(taskNames(got)) != fmt.Sprint(want) {
		t.Fatalf("claimed tasks %v, want %v", taskNames(got), want)
	}
}

// runWorkflows: a task runs only after every dependency succeeded, and only
// the current attempt's end resolves it (docs/design.md §6.18).
func runWorkflows(t *testing.T, b Backend) {
	t.Run("DependentsWaitForEveryDependency", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		w := e.workflow(t, task("a"), task("b", "a"), task("c", "a"), task("d", "b", "c"))
		if w.State != fenced.WorkflowRunning || len(w.Tasks) != 4 || w.Counts[fenced.JobQueued] != 1 || w.Counts[fenced.JobPending] != 3 {
			t.Fatalf("enqueued %+v", w)
		}
		if d := w.Tasks[3]; d.Name != "d" || fmt.Sprint(d.DependsOn) != "[b c]" || d.State != fenced.JobPending {
			t.Fatalf("task d = %+v", d)
		}
		got := e.claimTasks(t, "A", long)
		wantClaimed(t, got, "a")
		wantNoErr(t, e.c.CompleteJob(ctx(t), got["a"].Ref(), map[string]int{"a": 1}), "complete a")
		got = e.claimTasks(t, "A", long)
		wantClaimed(t, got, "b", "c")
		wantNoErr(t, e.c.CompleteJob(ctx(t), got["b"].Ref(), map[string]int{"b": 2}), "complete b")
		wantClaimed(t, e.claimTasks(t, "A", long))
		e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"d": fenced.JobPending, "c": fenced.JobRunning})
		wantNoErr(t, e.c.CompleteJob(ctx(t), got["c"].Ref(), map[string]int{"c": 3}), "complete c")
		d := e.claimTasks(t, "A", long)
		wantClaimed(t, d, "d")
		deps, err := e.c.TaskDependencies(ctx(t), d["d"].ID)
		wantNoErr(t, err, "task dependencies")
		if len(deps) != 2 || deps[0].Name != "b" || deps[1].Name != "c" || deps[0].State != fenced.JobSucceeded ||
			!sameJSON(t, deps[0].Output, []byte(`{"b":2}`)) || !sameJSON(t, deps[1].Output, []byte(`{"c":3}`)) {
			t.Fatalf("dependencies of d = %+v", deps)
		}
		wantNoErr(t, e.c.CompleteJob(ctx(t), d["d"].Ref(), nil), "complete d")
		got2, err := e.c.GetWorkflow(ctx(t), w.ID)
		wantNoErr(t, err, "get workflow")
		if got2.State != fenced.WorkflowSucceeded || got2.Counts[fenced.JobSucceeded] != 4 {
			t.Fatalf("finished workflow = %+v", got2)
		}
	})
	t.Run("AStaleAttemptReleasesNothing", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		w := e.workflow(t, task("a"), task("b", "a"))
		stale := e.claimTasks(t, "A", 50*time.Millisecond)["a"]
		e.recoverExpired(t, stale.ID)
		// Recovered and queued again: the stale attempt cannot complete it.
		err := e.c.CompleteJob(ctx(t), stale.Ref(), nil)
		wantStale(t, err, stale.Fence, stale.Fence, "", fenced.ReasonNotRunning)
		e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"a": fenced.JobQueued, "b": fenced.JobPending})
		time.Sleep(5 * time.Millisecond) // past recovery's 1µs backoff
		current := e.claimTasks(t, "B", long)["a"]
		if current == nil || current.Fence <= stale.Fence {
			t.Fatalf("re-claim = %+v", current)
		}
		// While the new attempt runs.
		wantStale(t, e.c.CompleteJob(ctx(t), stale.Ref(), nil), stale.Fence, current.Fence, "B", fenced.ReasonSuperseded)
		wantStale(t, e.c.FailJob(ctx(t), stale.Ref(), "late", 0, true), stale.Fence, current.Fence, "B", fenced.ReasonSuperseded)
		e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"a": fenced.JobRunning, "b": fenced.JobPending})
		wantNoErr(t, e.c.CompleteJob(ctx(t), current.Ref(), nil), "complete a")
		// After it completed: the stale attempt's late failure or cancel
		// cancels nothing.
		wantStale(t, e.c.FailJob(ctx(t), stale.Ref(), "late", 0, true), stale.Fence, current.Fence, "", fenced.ReasonSuperseded)
		_, err = e.c.EndJob(ctx(t), nil, fenced.JobEnd{Ref: stale.Ref(), Kind: fenced.EndCancel, Error: "late"})
		wantStale(t, err, stale.Fence, current.Fence, "", fenced.ReasonSuperseded)
		e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"a": fenced.JobSucceeded, "b": fenced.JobQueued})
		wantClaimed(t, e.claimTasks(t, "C", long), "b")
	})
	t.Run("RacingCompletionsReleaseAFanInOnce", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		other := e.b.open(t, e.url, fenced.Config{})
		for round := range 20 {
			w := e.workflow(t, task("x"), task("y"), task("z", "x", "y"))
			got := e.claimTasks(t, "A", long)
			wantClaimed(t, got, "x", "y")
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i, c := range []*fenced.Client{e.c, other} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = c.CompleteJob(ctx(t), got[[]string{"x", "y"}[i]].Ref(), nil)
				}()
			}
			wg.Wait()
			wantNoErr(t, errors.Join(errs...), fmt.Sprintf("round %d: complete x and y", round))
			e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"z": fenced.JobQueued})
			z := e.claimTasks(t, "A", long)
			wantClaimed(t, z, "z")
			wantNoErr(t, e.c.CompleteJob(ctx(t), z["z"].Ref(), nil), "complete z")
			if again := e.claimTasks(t, "A", long); len(again) != 0 {
				t.Fatalf("round %d: claimed %v after z completed", round, taskNames(again))
			}
		}
	})
	t.Run("AFailedDependencyCancelsItsDependentsUnlessTheyRunAnyway", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		anyway := task("c", "a")
		anyway.RunAnyway = true
		w := e.workflow(t, task("a"), task("b", "a"), anyway, task("d", "b"), task("e", "c"))
		a := e.claimTasks(t, "A", long)["a"]
		wantNoErr(t, e.c.FailJob(ctx(t), a.Ref(), "boom", 0, true), "fail a for good")
		e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"a": fenced.JobFailed, "b": fenced.JobCancelled,
			"d": fenced.JobCancelled, "c": fenced.JobQueued, "e": fenced.JobPending})
		wf, err := e.c.GetWorkflow(ctx(t), w.ID)
		wantNoErr(t, err, "get workflow")
		for _, k := range wf.Tasks {
			if k.CancelledByWorkflow != (k.Name == "b" || k.Name == "d") {
				t.Fatalf("task %s: cancelled by workflow = %v", k.Name, k.CancelledByWorkflow)
			}
		}
		c := e.claimTasks(t, "A", long)
		wantClaimed(t, c, "c")
		deps, err := e.c.TaskDependencies(ctx(t), c["c"].ID)
		wantNoErr(t, err, "task dependencies")
		if len(deps) != 1 || deps[0].Name != "a" || deps[0].State != fenced.JobFailed || deps[0].Error != "boom" {
			t.Fatalf("dependencies of c = %+v", deps)
		}
		// A task its workflow cancelled is not retried alone.
		b := wf.Tasks[1]
		_, err = e.c.RetryJob(ctx(t), b.JobID)
		wantInvalid(t, "job", err)
		wantNoErr(t, e.c.CompleteJob(ctx(t), c["c"].Ref(), nil), "complete c")
		wantClaimed(t, e.claimTasks(t, "A", long), "e")
	})
	t.Run("RetryingAFailedDependencyResumesTheWorkflow", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		anyway := task("c", "a")
		anyway.RunAnyway = true
		w := e.workflow(t, task("a"), task("b", "a"), anyway, task("d", "b"))
		a := e.claimTasks(t, "A", long)["a"]
		wantNoErr(t, e.c.FailJob(ctx(t), a.Ref(), "boom", 0, true), "fail a for good")
		e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"b": fenced.JobCancelled, "d": fenced.JobCancelled, "c": fenced.JobQueued})
		if wf, _ := e.c.GetWorkflow(ctx(t), w.ID); wf.State != fenced.WorkflowRunning {
			t.Fatalf("workflow with c queued is %s", wf.State)
		}
		r, err := e.c.RetryJob(ctx(t), a.ID)
		wantNoErr(t, err, "retry a")
		if r.State != fenced.JobQueued {
			t.Fatalf("retried a is %s", r.State)
		}
		// c, queued to run anyway, waits for a's new outcome again.
		e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"a": fenced.JobQueued, "b": fenced.JobPending,
			"c": fenced.JobPending, "d": fenced.JobPending})
		got := e.claimTasks(t, "A", long)
		wantClaimed(t, got, "a")
		wantNoErr(t, e.c.CompleteJob(ctx(t), got["a"].Ref(), nil), "complete a")
		got = e.claimTasks(t, "A", long)
		wantClaimed(t, got, "b", "c")
		wantNoErr(t, e.c.CompleteJob(ctx(t), got["b"].Ref(), nil), "complete b")
		wantClaimed(t, e.claimTasks(t, "A", long), "d")
	})
	t.Run("CancellingCancelsWhatHasNotFinished", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		w := e.workflow(t, task("a"), task("b", "a"), task("c"), task("d", "c"))
		got := e.claimTasks(t, "A", long)
		wantClaimed(t, got, "a", "c")
		wantNoErr(t, e.c.CompleteJob(ctx(t), got["c"].Ref(), nil), "complete c")
		// An operator's cancel of one pending task cancels it alone.
		d := e.taskID(t, w.ID, "d")
		cj, err := e.c.CancelJob(ctx(t), d)
		wantNoErr(t, err, "cancel d")
		if cj.State != fenced.JobCancelled {
			t.Fatalf("cancelled d is %s", cj.State)
		}
		wf, err := e.c.CancelWorkflow(ctx(t), w.ID)
		wantNoErr(t, err, "cancel workflow")
		if wf.CancelledAt == nil || wf.State != fenced.WorkflowRunning {
			t.Fatalf("cancelled workflow = %+v", wf)
		}
		e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"a": fenced.JobRunning, "b": fenced.JobCancelled,
			"c": fenced.JobSucceeded, "d": fenced.JobCancelled})
		hb, err := e.c.HeartbeatJob(ctx(t), got["a"].Ref(), long)
		wantNoErr(t, err, "heartbeat a")
		if !hb.CancelRequested {
			t.Fatal("the running task was not asked to stop")
		}
		_, err = e.c.EndJob(ctx(t), nil, fenced.JobEnd{Ref: got["a"].Ref(), Kind: fenced.EndCancel, Error: "stopped"})
		wantNoErr(t, err, "end a cancelled")
		if wf, _ := e.c.GetWorkflow(ctx(t), w.ID); wf.State != fenced.WorkflowCancelled {
			t.Fatalf("workflow is %s, want cancelled", wf.State)
		}
		// Retrying the workflow runs again what its cancel stopped.
		wf, err = e.c.RetryWorkflow(ctx(t), w.ID)
		wantNoErr(t, err, "retry workflow")
		if wf.CancelledAt != nil || wf.State != fenced.WorkflowRunning {
			t.Fatalf("retried workflow = %+v", wf)
		}
		e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"a": fenced.JobQueued, "b": fenced.JobPending,
			"c": fenced.JobSucceeded, "d": fenced.JobQueued})
	})
	t.Run("ACancelRunsDownALongChain", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		const n = 1000
		tasks := []fenced.WorkflowTaskParams{task("t0")}
		for i := 1; i < n; i++ {
			tasks = append(tasks, task(fmt.Sprintf("t%d", i), fmt.Sprintf("t%d", i-1)))
		}
		w := e.workflow(t, tasks...)
		_, err := e.c.CancelJob(ctx(t), w.Tasks[0].JobID)
		wantNoErr(t, err, "cancel the head")
		wf, err := e.c.GetWorkflow(ctx(t), w.ID)
		wantNoErr(t, err, "get workflow")
		if wf.Counts[fenced.JobCancelled] != n || wf.State != fenced.WorkflowFailed {
			t.Fatalf("after the head's cancel: %v, %s", wf.Counts, wf.State)
		}
	})
	t.Run("ARunningTaskFansOut", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		w := e.workflow(t, task("split"), task("other"))
		got := e.claimTasks(t, "A", long)
		split := got["split"]
		wantNoErr(t, e.c.CompleteJob(ctx(t), got["other"].Ref(), map[string]string{"o": "k"}), "complete other")
		parts := []fenced.WorkflowTaskParams{task("join", "p0", "p1", "p2", "other")}
		for i := range 3 {
			parts = append(parts, task(fmt.Sprintf("p%d", i), "split"))
		}
		// In the attempt's JobTx the additions commit with its completion.
		err := e.c.JobTx(ctx(t), split.Ref(), func(tx fenced.Tx) error {
			if _, err := e.c.AddWorkflowTasks(ctx(t), tx, split.Ref(), parts); err != nil {
				return err
			}
			return e.c.CompleteJobTx(ctx(t), tx, split.Ref(), nil)
		})
		wantNoErr(t, err, "fan out and complete")
		e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"split": fenced.JobSucceeded, "join": fenced.JobPending,
			"p0": fenced.JobQueued, "p1": fenced.JobQueued, "p2": fenced.JobQueued})
		got = e.claimTasks(t, "A", long)
		wantClaimed(t, got, "p0", "p1", "p2")
		for _, p := range got {
			wantNoErr(t, e.c.CompleteJob(ctx(t), p.Ref(), nil), "complete "+p.TaskName)
		}
		wantClaimed(t, e.claimTasks(t, "A", long), "join")
	})
	t.Run("AnEndThatWaitedForAFanOutReleasesWhatItAdded", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		other := e.b.open(t, e.url, fenced.Config{})
		w := e.workflow(t, task("split"), task("dep"))
		got := e.claimTasks(t, "A", long)
		split, dep := got["split"], got["dep"]
		// split adds a task after dep while dep's worker completes it: the
		// completion waits for the addition, and then releases the task.
		done := make(chan error, 1)
		err := e.c.JobTx(ctx(t), split.Ref(), func(tx fenced.Tx) error {
			if _, err := e.c.AddWorkflowTasks(ctx(t), tx, split.Ref(), []fenced.WorkflowTaskParams{task("late", "dep")}); err != nil {
				return err
			}
			go func() { done <- other.CompleteJob(ctx(t), dep.Ref(), nil) }()
			if e.b.WaitBlocked != nil {
				e.b.WaitBlocked(t, e.url)
			} else {
				time.Sleep(300 * time.Millisecond)
			}
			return nil
		})
		wantNoErr(t, err, "fan out")
		wantNoErr(t, <-done, "complete dep")
		e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"dep": fenced.JobSucceeded, "late": fenced.JobQueued})
	})
	t.Run("AStaleAttemptCannotFanOut", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		w := e.workflow(t, task("split"))
		stale := e.claimTasks(t, "A", 50*time.Millisecond)["split"]
		e.recoverExpired(t, stale.ID)
		_, err := e.c.AddWorkflowTasks(ctx(t), nil, stale.Ref(), []fenced.WorkflowTaskParams{task("late", "split")})
		wantStale(t, err, stale.Fence, stale.Fence, "", fenced.ReasonNotRunning)
		time.Sleep(5 * time.Millisecond)
		current := e.claimTasks(t, "B", long)["split"]
		_, err = e.c.AddWorkflowTasks(ctx(t), nil, stale.Ref(), []fenced.WorkflowTaskParams{task("late", "split")})
		wantStale(t, err, stale.Fence, current.Fence, "B", fenced.ReasonSuperseded)
		if wf, _ := e.c.GetWorkflow(ctx(t), w.ID); len(wf.Tasks) != 1 {
			t.Fatalf("a stale attempt added tasks: %+v", wf.Tasks)
		}
		// The current attempt may; a dependency on a name the workflow does
		// not have is refused.
		_, err = e.c.AddWorkflowTasks(ctx(t), nil, current.Ref(), []fenced.WorkflowTaskParams{task("x", "nope")})
		wantInvalid(t, "tasks", err)
		wf, err := e.c.AddWorkflowTasks(ctx(t), nil, current.Ref(), []fenced.WorkflowTaskParams{task("next", "split")})
		wantNoErr(t, err, "add by the current attempt")
		if len(wf.Tasks) != 2 {
			t.Fatalf("after the addition: %+v", wf.Tasks)
		}
	})
	t.Run("ATransactionRolledBackLeavesNoWorkflow", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		l := e.acquire(t, "wf", "A", long)
		var id int64
		rollback := errors.New("roll back")
		err := e.c.LeaseTx(ctx(t), *l, func(tx fenced.Tx) error {
			w, err := e.c.EnqueueWorkflow(ctx(t), tx, fenced.WorkflowParams{Name: "w", Tasks: []fenced.WorkflowTaskParams{task("a"), task("b", "a")}})
			if err != nil {
				return err
			}
			id = w.ID
			return rollback
		})
		wantErrIs(t, err, rollback)
		_, err = e.c.GetWorkflow(ctx(t), id)
		wantErrIs(t, err, fenced.ErrNotFound)
		if jobs := e.claim(t, fenced.DefaultQueue, "A", 10, long); len(jobs) != 0 {
			t.Fatalf("claimed %d tasks of a rolled back workflow", len(jobs))
		}
	})
	t.Run("AWorkflowIsDeletedWhole", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		w := e.workflow(t, task("a"), task("b", "a"))
		a := e.claimTasks(t, "A", long)["a"]
		wantNoErr(t, e.c.CompleteJob(ctx(t), a.Ref(), nil), "complete a")
		wantInvalid(t, "job", e.c.DeleteJob(ctx(t), a.ID))
		// a finished, b has not: retention leaves the workflow alone.
		_, err := e.c.DeleteFinishedJobs(ctx(t), nil, 0, 100)
		wantNoErr(t, err, "retention")
		if _, err := e.c.GetWorkflow(ctx(t), w.ID); err != nil {
			t.Fatalf("retention took a workflow with a pending task: %v", err)
		}
		b := e.claimTasks(t, "A", long)["b"]
		wantNoErr(t, e.c.CompleteJob(ctx(t), b.Ref(), nil), "complete b")
		plain := e.enqueue(t, fenced.EnqueueParams{Kind: "other"})
		time.Sleep(5 * time.Millisecond) // past b's finish on a millisecond clock (SQLite)
		n, err := e.c.DeleteFinishedJobs(ctx(t), nil, 0, 100)
		wantNoErr(t, err, "retention")
		if n != 2 {
			t.Fatalf("retention deleted %d jobs, want the workflow's 2", n)
		}
		_, err = e.c.GetWorkflow(ctx(t), w.ID)
		wantErrIs(t, err, fenced.ErrNotFound)
		_, _, err = e.c.GetJob(ctx(t), b.ID)
		wantErrIs(t, err, fenced.ErrNotFound)
		e.job(t, plain.ID)
		w2 := e.workflow(t, task("a"))
		wantNoErr(t, e.c.DeleteWorkflow(ctx(t), w2.ID), "delete workflow")
		wantErrIs(t, e.c.DeleteWorkflow(ctx(t), w2.ID), fenced.ErrNotFound)
	})
	t.Run("ListWorkflows", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		w1 := e.workflow(t, task("a"), task("b", "a"))
		w2 := e.workflow(t, task("a"))
		ws, err := e.c.ListWorkflows(ctx(t), fenced.WorkflowFilter{Desc: true})
		wantNoErr(t, err, "list workflows")
		if len(ws) != 2 || ws[0].ID != w2.ID || ws[1].ID != w1.ID || ws[1].Counts[fenced.JobPending] != 1 ||
			ws[1].Counts[fenced.JobQueued] != 1 || ws[0].Tasks != nil {
			t.Fatalf("listed %+v %+v", ws[0], ws[1])
		}
		ws, err = e.c.ListWorkflows(ctx(t), fenced.WorkflowFilter{AfterID: w1.ID})
		wantNoErr(t, err, "list workflows")
		if len(ws) != 1 || ws[0].ID != w2.ID {
			t.Fatalf("after %d: %+v", w1.ID, ws)
		}
		pending, err := e.c.ListJobs(ctx(t), fenced.JobFilter{State: fenced.JobPending})
		wantNoErr(t, err, "list pending jobs")
		if len(pending) != 1 || pending[0].TaskName != "b" || pending[0].WorkflowID != w1.ID {
			t.Fatalf("pending jobs: %+v", pending)
		}
	})
	t.Run("Validation", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for name, tasks := range map[string][]fenced.WorkflowTaskParams{
			"cycle":      {task("a", "c"), task("b", "a"), task("c", "b")},
			"unknown":    {task("a", "z")},
			"twice":      {task("a"), task("a")},
			"self":       {task("a", "a")},
			"sequenced":  {{Name: "a", Job: fenced.EnqueueParams{Kind: "k", SequenceKey: "s"}}},
			"idempotent": {{Name: "a", Job: fenced.EnqueueParams{Kind: "k", IdempotencyKey: "i"}}},
			"none":       nil,
		} {
			_, err := e.c.EnqueueWorkflow(ctx(t), nil, fenced.WorkflowParams{Name: "w", Tasks: tasks})
			var ie *fenced.InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("%s: want an InvalidError, got %v", name, err)
			}
		}
		if ws, _ := e.c.ListWorkflows(ctx(t), fenced.WorkflowFilter{}); len(ws) != 0 {
			t.Fatalf("invalid workflows were written: %+v", ws)
		}
	})
}

// taskID is the job id of task name of workflow id.
func (e *env) taskID(t *testing.T, id int64, name string) int64 {
	t.Helper()
	w, err := e.c.GetWorkflow(ctx(t), id)
	wantNoErr(t, err, "get workflow")
	for _, k := range w.Tasks {
		if k.Name == name {
			return k.JobID
		}
	}
	t.Fatalf("workflow %d has no task %s", id, name)
	return 0
}
