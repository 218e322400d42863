package mysqldriver_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/internal/test/testdb"
)

// The release rule of workflows on MySQL/MariaDB, through the Client: the
// rule runs in Go inside each transition's transaction, so these tests
// race and break it where the dialect could.

// task is a task of kind "k" depending on deps.
func task(name string, deps ...string) fenced.WorkflowTaskParams {
	return fenced.WorkflowTaskParams{Name: name, Job: fenced.EnqueueParams{Kind: "k"}, DependsOn: deps}
}

// taskIDs maps a workflow's task names to their job ids.
func taskIDs(w *fenced.Workflow) map[string]int64 {
	ids := map[string]int64{}
	for _, t := range w.Tasks {
		ids[t.Name] = t.JobID
	}
	return ids
}

// claimAll claims every claimable job of the default queue, by id.
func claimAll(t *testing.T, c *fenced.Client, ttl time.Duration) map[int64]*fenced.Job {
	t.Helper()
	jobs, err := c.ClaimJobs(ctx(t), fenced.DefaultQueue, "w", 100, ttl)
	must(t, err, "claim")
	out := map[int64]*fenced.Job{}
	for _, j := range jobs {
		out[j.ID] = j
	}
	return out
}

// claimedIDs are the ids of jobs, sorted.
func claimedIDs(jobs map[int64]*fenced.Job) []int64 {
	var ids []int64
	for id := range jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func stateOf(t *testing.T, c *fenced.Client, id int64) *fenced.Job {
	t.Helper()
	j, _, err := c.GetJob(ctx(t), id)
	must(t, err, "get job")
	return j
}

// expire ends the lease of job id's running attempt, as if its worker had
// stopped heartbeating, and recovers it.
func expire(t *testing.T, url string, c *fenced.Client, id int64) {
	t.Helper()
	testdb.MySQLExec(t, url, `UPDATE fenced_jobs SET lease_expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE id = ?`, id)
	n, err := c.RecoverJobs(ctx(t), nil, 100, fenced.Backoff{Base: time.Microsecond, Max: time.Microsecond, Jitter: -1})
	must(t, err, "recover")
	if n != 1 {
		t.Fatalf("recovered %d jobs, want 1", n)
	}
}

// TestWorkflowDiamond: A → {B, C} → D; D is claimable only once B and C
// both completed, and the workflow reads back whole.
func TestWorkflowDiamond(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	w, err := c.EnqueueWorkflow(ctx(t), nil, fenced.WorkflowParams{Name: "diamond", Tasks: []fenced.WorkflowTaskParams{
		task("D", "C", "B"), task("A"), task("B", "A"), task("C", "A"),
	}})
	must(t, err, "enqueue workflow")
	ids := taskIDs(w)
	if w.State != fenced.WorkflowRunning || w.Counts[fenced.JobPending] != 3 || w.Counts[fenced.JobQueued] != 1 {
		t.Fatalf("workflow = %+v", w)
	}
	for _, tk := range w.Tasks {
		if tk.Name == "D" && !slices.Equal(tk.DependsOn, []string{"B", "C"}) {
			t.Fatalf("D depends on %v, want [B C] sorted", tk.DependsOn)
		}
	}
	j := stateOf(t, c, ids["D"])
	if j.State != fenced.JobPending || j.WorkflowID != w.ID || j.TaskName != "D" {
		t.Fatalf("D = %s, workflow %d, task %q", j.State, j.WorkflowID, j.TaskName)
	}
	pending, err := c.ListJobs(ctx(t), fenced.JobFilter{State: fenced.JobPending, Limit: 10})
	must(t, err, "list pending")
	if len(pending) != 3 {
		t.Fatalf("%d pending jobs listed, want 3", len(pending))
	}
	counts, err := c.CountJobs(ctx(t))
	must(t, err, "count")
	if n := countOf(counts, fenced.JobPending); n != 3 {
		t.Fatalf("counted %d pending, want 3", n)
	}

	got := claimAll(t, c, time.Minute)
	if !slices.Equal(claimedIDs(got), []int64{ids["A"]}) {
		t.Fatalf("claimed %v, want only A", claimedIDs(got))
	}
	if got[ids["A"]].WorkflowID != w.ID || got[ids["A"]].TaskName != "A" {
		t.Fatalf("claimed job carries workflow %d task %q", got[ids["A"]].WorkflowID, got[ids["A"]].TaskName)
	}
	must(t, c.CompleteJob(ctx(t), got[ids["A"]].Ref(), map[string]int{"a": 1}), "complete A")
	got = claimAll(t, c, time.Minute)
	want := []int64{ids["B"], ids["C"]}
	slices.Sort(want)
	if !slices.Equal(claimedIDs(got), want) {
		t.Fatalf("claimed %v, want B and C", claimedIDs(got))
	}
	must(t, c.CompleteJob(ctx(t), got[ids["B"]].Ref(), nil), "complete B")
	if again := claimAll(t, c, time.Minute); len(again) != 0 {
		t.Fatalf("claimed %v with C still running", claimedIDs(again))
	}
	if s := stateOf(t, c, ids["D"]).State; s != fenced.JobPending {
		t.Fatalf("D is %s with C running, want pending", s)
	}
	must(t, c.CompleteJob(ctx(t), got[ids["C"]].Ref(), nil), "complete C")
	got = claimAll(t, c, time.Minute)
	if !slices.Equal(claimedIDs(got), []int64{ids["D"]}) {
		t.Fatalf("claimed %v, want D", claimedIDs(got))
	}
	deps, err := c.TaskDependencies(ctx(t), ids["D"])
	must(t, err, "task dependencies")
	if len(deps) != 2 || deps[0].Name != "B" || deps[1].Name != "C" || deps[0].State != fenced.JobSucceeded {
		t.Fatalf("dependencies of D = %+v", deps)
	}
	if deps, _ := c.TaskDependencies(ctx(t), ids["B"]); len(deps) != 1 || string(deps[0].Output) != `{"a":1}` {
		t.Fatalf("dependencies of B = %+v, want A with its output", deps)
	}
	must(t, c.CompleteJob(ctx(t), got[ids["D"]].Ref(), nil), "complete D")
	w, err = c.GetWorkflow(ctx(t), w.ID)
	must(t, err, "get workflow")
	if w.State != fenced.WorkflowSucceeded || w.Counts[fenced.JobSucceeded] != 4 {
		t.Fatalf("workflow = %s %v", w.State, w.Counts)
	}
	ws, err := c.ListWorkflows(ctx(t), fenced.WorkflowFilter{Name: "diamond"})
	must(t, err, "list workflows")
	if len(ws) != 1 || ws[0].ID != w.ID || ws[0].Counts[fenced.JobSucceeded] != 4 || ws[0].Tasks != nil {
		t.Fatalf("listed %+v", ws)
	}
	if err := c.DeleteJob(ctx(t), ids["A"]); !errors.Is(err, fenced.ErrInvalid) {
		t.Fatalf("delete of a task = %v, want an *InvalidError", err)
	}
	must(t, c.DeleteWorkflow(ctx(t), w.ID), "delete workflow")
	if _, err := c.GetWorkflow(ctx(t), w.ID); !errors.Is(err, fenced.ErrNotFound) {
		t.Fatalf("get deleted workflow = %v", err)
	}
	if _, _, err := c.GetJob(ctx(t), ids["A"]); !errors.Is(err, fenced.ErrNotFound) {
		t.Fatalf("get a deleted workflow's task = %v", err)
	}
}

func countOf(counts []fenced.JobCount, s fenced.JobState) int {
	n := 0
	for _, c := range counts {
		if c.State == s {
			n += int(c.Count)
		}
	}
	return n
}

// TestWorkflowStaleAttemptReleasesNothing: an attempt of B recovered after
// its lease expired cannot complete, whether B is queued again or runs a
// new attempt, and its refused completion releases nothing.
func TestWorkflowStaleAttemptReleasesNothing(t *testing.T) {
	t.Parallel()
	url, c := setup(t)
	w, err := c.EnqueueWorkflow(ctx(t), nil, fenced.WorkflowParams{Name: "stale", Tasks: []fenced.WorkflowTaskParams{
		task("B"), task("D", "B"),
	}})
	must(t, err, "enqueue workflow")
	ids := taskIDs(w)
	old := claimAll(t, c, time.Minute)[ids["B"]]
	expire(t, url, c, ids["B"])
	if err := c.CompleteJob(ctx(t), old.Ref(), nil); !errors.Is(err, fenced.ErrStale) {
		t.Fatalf("stale completion of a queued B = %v", err)
	}
	if s := stateOf(t, c, ids["D"]).State; s != fenced.JobPending {
		t.Fatalf("D is %s after a stale completion, want pending", s)
	}
	cur := claimAll(t, c, time.Minute)[ids["B"]]
	if cur == nil || cur.Fence == old.Fence {
		t.Fatalf("B not claimed again under a new fence")
	}
	if err := c.CompleteJob(ctx(t), old.Ref(), nil); !errors.Is(err, fenced.ErrStale) {
		t.Fatalf("stale completion of a re-claimed B = %v", err)
	}
	if s := stateOf(t, c, ids["D"]).State; s != fenced.JobPending {
		t.Fatalf("D is %s after a stale completion, want pending", s)
	}
	must(t, c.CompleteJob(ctx(t), cur.Ref(), nil), "complete B")
	if s := stateOf(t, c, ids["D"]).State; s != fenced.JobQueued {
		t.Fatalf("D is %s after B completed, want queued", s)
	}
}

// TestWorkflowFailureCancelsAndRetryResumes: B failing for good cancels D
// (by its workflow) while E, which runs anyway, is queued; D cannot be
// retried itself; a retry of B puts D and E back to pending, and B's
// completion then releases both.
func TestWorkflowFailureCancelsAndRetryResumes(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	e := task("E", "B")
	e.RunAnyway = true
	w, err := c.EnqueueWorkflow(ctx(t), nil, fenced.WorkflowParams{Name: "fail", Tasks: []fenced.WorkflowTaskParams{
		task("B"), task("D", "B"), e, task("F", "D"),
	}})
	must(t, err, "enqueue workflow")
	ids := taskIDs(w)
	b := claimAll(t, c, time.Minute)[ids["B"]]
	must(t, c.FailJob(ctx(t), b.Ref(), "boom", 0, true), "fail B for good")
	w, err = c.GetWorkflow(ctx(t), w.ID)
	must(t, err, "get workflow")
	for _, tk := range w.Tasks {
		switch tk.Name {
		case "D", "F":
			if tk.State != fenced.JobCancelled || !tk.CancelledByWorkflow {
				t.Fatalf("%s = %s (by workflow %v), want cancelled by its workflow", tk.Name, tk.State, tk.CancelledByWorkflow)
			}
		case "E":
			if tk.State != fenced.JobQueued {
				t.Fatalf("E = %s, want queued (runs anyway)", tk.State)
			}
		}
	}
	if j := stateOf(t, c, ids["D"]); j.LastError != driver.TaskCancelError {
		t.Fatalf("D's error = %q", j.LastError)
	}
	deps, err := c.TaskDependencies(ctx(t), ids["E"])
	must(t, err, "dependencies of E")
	if len(deps) != 1 || deps[0].State != fenced.JobFailed || deps[0].Error != "boom" {
		t.Fatalf("dependencies of E = %+v", deps)
	}
	if _, err := c.RetryJob(ctx(t), ids["D"]); !errors.Is(err, fenced.ErrInvalid) {
		t.Fatalf("retry of D = %v, want the refusal of a task its workflow cancelled", err)
	}
	if _, err := c.RetryJob(ctx(t), ids["B"]); err != nil {
		t.Fatalf("retry B: %v", err)
	}
	for _, name := range []string{"D", "E", "F"} {
		j := stateOf(t, c, ids[name])
		if j.State != fenced.JobPending || j.LastError != "" {
			t.Fatalf("%s = %s (%q) after B's retry, want pending", name, j.State, j.LastError)
		}
	}
	b = claimAll(t, c, time.Minute)[ids["B"]]
	if b == nil {
		t.Fatal("B not claimable after its retry")
	}
	must(t, c.CompleteJob(ctx(t), b.Ref(), nil), "complete B")
	got := claimAll(t, c, time.Minute)
	want := []int64{ids["D"], ids["E"]}
	slices.Sort(want)
	if !slices.Equal(claimedIDs(got), want) {
		t.Fatalf("claimed %v, want D and E", claimedIDs(got))
	}
}

// TestWorkflowChainCancelledFromItsHead: a chain of 1,000 tasks, its head
// cancelled, is cancelled whole in that transaction; the head's retry puts
// the rest back to pending, through the whole chain.
func TestWorkflowChainCancelledFromItsHead(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	const n = 1000
	tasks := []fenced.WorkflowTaskParams{task("t0")}
	for i := 1; i < n; i++ {
		tasks = append(tasks, task(fmt.Sprintf("t%d", i), fmt.Sprintf("t%d", i-1)))
	}
	w, err := c.EnqueueWorkflow(ctx(t), nil, fenced.WorkflowParams{Name: "chain", Tasks: tasks})
	must(t, err, "enqueue workflow")
	ids := taskIDs(w)
	if _, err := c.CancelJob(ctx(t), ids["t0"]); err != nil {
		t.Fatalf("cancel the head: %v", err)
	}
	w, err = c.GetWorkflow(ctx(t), w.ID)
	must(t, err, "get workflow")
	if w.Counts[fenced.JobCancelled] != n || w.State != fenced.WorkflowFailed {
		t.Fatalf("after the head's cancel: %s %v", w.State, w.Counts)
	}
	if j := stateOf(t, c, ids[fmt.Sprintf("t%d", n-1)]); j.State != fenced.JobCancelled || j.LastError != driver.TaskCancelError {
		t.Fatalf("the tail = %s %q", j.State, j.LastError)
	}
	if _, err := c.RetryJob(ctx(t), ids["t0"]); err != nil {
		t.Fatalf("retry the head: %v", err)
	}
	w, err = c.GetWorkflow(ctx(t), w.ID)
	must(t, err, "get workflow")
	if w.Counts[fenced.JobQueued] != 1 || w.Counts[fenced.JobPending] != n-1 {
		t.Fatalf("after the head's retry: %v", w.Counts)
	}
}

// TestWorkflowFanInRace: the two dependencies of one task complete at once,
// in two transactions, many times: the task is released exactly once
// (queued, its counters at zero, claimed once).
func TestWorkflowFanInRace(t *testing.T) {
	t.Parallel()
	url, c := setup(t)
	db := openDB(t, url)
	for round := range 40 {
		w, err := c.EnqueueWorkflow(ctx(t), nil, fenced.WorkflowParams{Name: "race", Tasks: []fenced.WorkflowTaskParams{
			task("A"), task("B"), task("C", "A", "B"),
		}})
		must(t, err, "enqueue workflow")
		ids := taskIDs(w)
		got := claimAll(t, c, time.Minute)
		if len(got) != 2 {
			t.Fatalf("round %d: claimed %d jobs, want A and B", round, len(got))
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, name := range []string{"A", "B"} {
			ref := got[ids[name]].Ref()
			wg.Go(func() {
				<-start
				if err := c.CompleteJob(ctx(t), ref, nil); err != nil {
					t.Errorf("round %d: complete %s: %v", round, name, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		j := stateOf(t, c, ids["C"])
		if j.State != fenced.JobQueued {
			t.Fatalf("round %d: C is %s after both dependencies completed, want queued", round, j.State)
		}
		var waiting, failed int
		must(t, db.QueryRowContext(ctx(t), `SELECT deps_waiting, deps_failed FROM fenced_jobs WHERE id = ?`,
			ids["C"]).Scan(&waiting, &failed), "read C's counters")
		if waiting != 0 || failed != 0 {
			t.Fatalf("round %d: C's counters = %d waiting, %d failed", round, waiting, failed)
		}
		claimed := claimAll(t, c, time.Minute)
		if len(claimed) != 1 || claimed[ids["C"]] == nil {
			t.Fatalf("round %d: claimed %v, want C once", round, claimedIDs(claimed))
		}
		must(t, c.CompleteJob(ctx(t), claimed[ids["C"]].Ref(), nil), "complete C")
	}
}

// TestWorkflowAddTasks: a running task adds tasks depending on each other,
// on itself and on a task that already succeeded; a stale attempt adds
// nothing, nor does an addition naming an unknown task.
func TestWorkflowAddTasks(t *testing.T) {
	t.Parallel()
	url, c := setup(t)
	w, err := c.EnqueueWorkflow(ctx(t), nil, fenced.WorkflowParams{Name: "fan-out", Tasks: []fenced.WorkflowTaskParams{
		task("done"), task("parent", "done"),
	}})
	must(t, err, "enqueue workflow")
	ids := taskIDs(w)
	first := claimAll(t, c, time.Minute)[ids["done"]]
	must(t, c.CompleteJob(ctx(t), first.Ref(), nil), "complete done")
	parent := claimAll(t, c, time.Minute)[ids["parent"]]
	if parent == nil {
		t.Fatal("parent not claimable")
	}
	if _, err := c.AddWorkflowTasks(ctx(t), nil, parent.Ref(), []fenced.WorkflowTaskParams{task("x", "nope")}); !errors.Is(err, fenced.ErrInvalid) {
		t.Fatalf("addition naming an unknown task = %v", err)
	}
	if _, err := c.AddWorkflowTasks(ctx(t), nil, parent.Ref(), []fenced.WorkflowTaskParams{task("done")}); !errors.Is(err, fenced.ErrInvalid) {
		t.Fatalf("addition of a name taken = %v", err)
	}
	w, err = c.AddWorkflowTasks(ctx(t), nil, parent.Ref(), []fenced.WorkflowTaskParams{
		task("after-done", "done"), task("child", "parent"), task("grandchild", "child", "done"),
	})
	must(t, err, "add tasks")
	if len(w.Tasks) != 5 {
		t.Fatalf("workflow has %d tasks after the addition, want 5", len(w.Tasks))
	}
	ids = taskIDs(w)
	for name, want := range map[string]fenced.JobState{"after-done": fenced.JobQueued, "child": fenced.JobPending, "grandchild": fenced.JobPending} {
		if s := stateOf(t, c, ids[name]).State; s != want {
			t.Fatalf("%s = %s, want %s", name, s, want)
		}
	}
	expire(t, url, c, ids["parent"])
	if _, err := c.AddWorkflowTasks(ctx(t), nil, parent.Ref(), []fenced.WorkflowTaskParams{task("late", "parent")}); !errors.Is(err, fenced.ErrStale) {
		t.Fatalf("addition by a stale attempt = %v", err)
	}
	// Inside the attempt's JobTx, the addition commits with the completion.
	got := claimAll(t, c, time.Minute)
	p := got[ids["parent"]]
	if p == nil {
		t.Fatal("parent not claimable again")
	}
	must(t, c.JobTx(ctx(t), p.Ref(), func(tx fenced.Tx) error {
		if _, err := c.AddWorkflowTasks(ctx(t), tx, p.Ref(), []fenced.WorkflowTaskParams{task("sibling", "child")}); err != nil {
			return err
		}
		return c.CompleteJobTx(ctx(t), tx, p.Ref(), nil)
	}), "add and complete in one JobTx")
	w, err = c.GetWorkflow(ctx(t), w.ID)
	must(t, err, "get workflow")
	ids = taskIDs(w)
	if _, ok := ids["late"]; ok || len(w.Tasks) != 6 {
		t.Fatalf("tasks = %v", ids)
	}
	if s := stateOf(t, c, ids["child"]).State; s != fenced.JobQueued {
		t.Fatalf("child = %s after parent completed, want queued", s)
	}
}

// TestWorkflowRetention: retention deletes a workflow whole once every task
// finished before the age, never a task alone, and plain jobs as before.
func TestWorkflowRetention(t *testing.T) {
	t.Parallel()
	url, c := setup(t)
	w, err := c.EnqueueWorkflow(ctx(t), nil, fenced.WorkflowParams{Name: "old", Tasks: []fenced.WorkflowTaskParams{
		task("a"), task("b", "a"),
	}})
	must(t, err, "enqueue workflow")
	ids := taskIDs(w)
	plain, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k"})
	must(t, err, "enqueue")
	for _, j := range claimAll(t, c, time.Minute) {
		must(t, c.CompleteJob(ctx(t), j.Ref(), nil), "complete")
	}
	testdb.MySQLBackdate(t, url, 2*time.Hour)
	n, err := c.DeleteFinishedJobs(ctx(t), nil, time.Hour, 100)
	must(t, err, "retention")
	if n != 1 {
		t.Fatalf("deleted %d jobs with b unfinished, want the plain one", n)
	}
	if _, _, err := c.GetJob(ctx(t), plain.ID); !errors.Is(err, fenced.ErrNotFound) {
		t.Fatalf("plain job after retention: %v", err)
	}
	if s := stateOf(t, c, ids["a"]).State; s != fenced.JobSucceeded {
		t.Fatalf("a = %s: a task went alone", s)
	}
	b := claimAll(t, c, time.Minute)[ids["b"]]
	must(t, c.CompleteJob(ctx(t), b.Ref(), nil), "complete b")
	if n, err := c.DeleteFinishedJobs(ctx(t), nil, time.Hour, 100); err != nil || n != 0 {
		t.Fatalf("retention with b just finished = %d, %v", n, err)
	}
	testdb.MySQLBackdate(t, url, 2*time.Hour)
	if n, err := c.DeleteFinishedJobs(ctx(t), nil, time.Hour, 100); err != nil || n != 2 {
		t.Fatalf("retention of the finished workflow = %d, %v, want its 2 tasks", n, err)
	}
	if _, err := c.GetWorkflow(ctx(t), w.ID); !errors.Is(err, fenced.ErrNotFound) {
		t.Fatalf("workflow after retention: %v", err)
	}
}

// TestWorkflowCancelAndRetryWorkflow: a cancel cancels pending and queued
// tasks and asks the running to stop; a retry puts them all back.
func TestWorkflowCancelAndRetryWorkflow(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	w, err := c.EnqueueWorkflow(ctx(t), nil, fenced.WorkflowParams{Name: "wf", Tasks: []fenced.WorkflowTaskParams{
		task("a"), task("b"), task("c", "a", "b"), task("d", "c"),
	}})
	must(t, err, "enqueue workflow")
	ids := taskIDs(w)
	running := claimAll(t, c, time.Minute)
	w, err = c.CancelWorkflow(ctx(t), w.ID)
	must(t, err, "cancel workflow")
	if w.CancelledAt == nil || w.Counts[fenced.JobCancelled] != 2 || w.Counts[fenced.JobRunning] != 2 {
		t.Fatalf("after the cancel: %v %v", w.CancelledAt, w.Counts)
	}
	if j := stateOf(t, c, ids["a"]); !j.CancelRequested {
		t.Fatal("running a not asked to stop")
	}
	for _, j := range running {
		_, err = c.EndJob(ctx(t), nil, fenced.JobEnd{Ref: j.Ref(), Kind: fenced.EndCancel, Error: "stopped"})
		must(t, err, "a running task stops")
	}
	w, err = c.GetWorkflow(ctx(t), w.ID)
	must(t, err, "get workflow")
	if w.State != fenced.WorkflowCancelled {
		t.Fatalf("state = %s, want cancelled", w.State)
	}
	w, err = c.RetryWorkflow(ctx(t), w.ID)
	must(t, err, "retry workflow")
	if w.CancelledAt != nil || w.Counts[fenced.JobQueued] != 2 || w.Counts[fenced.JobPending] != 2 {
		t.Fatalf("after the retry: %v %v", w.CancelledAt, w.Counts)
	}
	if _, err := c.CancelWorkflow(ctx(t), w.ID+1000); !errors.Is(err, fenced.ErrNotFound) {
		t.Fatalf("cancel of no workflow = %v", err)
	}
}

// TestMigrationWorkflowsOnJobs: migration 15 applies to a database that
// holds jobs of every state, which read back unchanged, and the queue
// goes on.
func TestMigrationWorkflowsOnJobs(t *testing.T) {
	t.Parallel()
	url := testdb.MySQL(t)
	files, err := filepath.Glob("migrations/*.sql")
	must(t, err, "list migrations")
	sort.Strings(files)
	if len(files) != latestMigration {
		t.Fatalf("%d migration files, want %d", len(files), latestMigration)
	}
	testdb.MySQLExec(t, url, `CREATE TABLE fenced_schema_migrations (version INT NOT NULL PRIMARY KEY,
		name VARCHAR(100) NOT NULL, applied_at DATETIME(6) NOT NULL)`)
	for i, f := range files[:latestMigration-1] {
		sqlText, err := os.ReadFile(f)
		must(t, err, "read "+f)
		testdb.MySQLExec(t, url, string(sqlText))
		testdb.MySQLExec(t, url, `INSERT INTO fenced_schema_migrations VALUES (?, ?, UTC_TIMESTAMP(6))`, i+1, filepath.Base(f))
	}
	for i, state := range []string{"queued", "running", "succeeded", "failed", "cancelled"} {
		lease := "NULL"
		if state == "running" {
			lease = "UTC_TIMESTAMP(6) + INTERVAL 1 HOUR"
		}
		testdb.MySQLExec(t, url, fmt.Sprintf(`INSERT INTO fenced_jobs (id, kind, queue, args, state, run_at, max_attempts,
			created_at, updated_at, lease_expires_at) VALUES (%d, 'k', 'default', '{"n": %d}', '%s', UTC_TIMESTAMP(6), 3,
			UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), %s)`, i+1, i, state, lease))
	}
	c, err := fenced.Open(ctx(t), url, fenced.Config{})
	must(t, err, "open")
	t.Cleanup(func() { c.Close() })
	vs, err := c.Migrate(ctx(t))
	if err != nil || !slices.Equal(vs, []int{latestMigration}) {
		t.Fatalf("migrate = %v, %v", vs, err)
	}
	for i, state := range []fenced.JobState{fenced.JobQueued, fenced.JobRunning, fenced.JobSucceeded, fenced.JobFailed, fenced.JobCancelled} {
		j := stateOf(t, c, int64(i+1))
		if j.State != state || string(j.Args) != fmt.Sprintf(`{"n": %d}`, i) || j.WorkflowID != 0 || j.TaskName != "" {
			t.Fatalf("job %d after the migration = %s %s workflow %d", i+1, j.State, j.Args, j.WorkflowID)
		}
	}
	got := claimAll(t, c, time.Minute)
	if len(got) != 1 || got[1] == nil {
		t.Fatalf("claimed %v, want job 1", claimedIDs(got))
	}
	if _, err := c.EnqueueWorkflow(ctx(t), nil, fenced.WorkflowParams{Name: "w", Tasks: []fenced.WorkflowTaskParams{task("a"), task("b", "a")}}); err != nil {
		t.Fatalf("enqueue a workflow after the migration: %v", err)
	}
	testdb.MySQLExec(t, url, `DELETE FROM fenced_schema_migrations WHERE version = ?`, latestMigration)
	if vs, err := c.Migrate(ctx(t)); err != nil || len(vs) != 1 {
		t.Fatalf("migration 15 again = %v, %v", vs, err)
	}
	if _, err := openDB(t, url).ExecContext(ctx(t), `UPDATE fenced_jobs SET state = 'bogus' WHERE id = 1`); err == nil {
		t.Fatal("the state CHECK let a bogus state in")
	}
}

// TestWorkflowBatchEndsFindTheirTasks: a batch of ends that holds tasks
// among plain jobs (ended after them, by id) releases the tasks'
// dependents, whichever way the batch goes: completions alone, or mixed
// kinds.
func TestWorkflowBatchEndsFindTheirTasks(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	w, err := c.EnqueueWorkflow(ctx(t), nil, fenced.WorkflowParams{Name: "batch", Tasks: []fenced.WorkflowTaskParams{
		task("A"), task("B"), task("after-A", "A"), task("after-B", "B"),
	}})
	must(t, err, "enqueue workflow")
	ids := taskIDs(w)
	for range 3 {
		_, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "plain"})
		must(t, err, "enqueue")
	}
	got := claimAll(t, c, time.Minute)
	if len(got) != 5 {
		t.Fatalf("claimed %d jobs, want A, B and 3 plain", len(got))
	}
	var completes, mixed []fenced.JobEnd
	plain := 0
	for _, id := range claimedIDs(got) {
		switch {
		case id == ids["A"]:
			completes = append(completes, fenced.JobEnd{Ref: got[id].Ref(), Kind: fenced.EndComplete})
		case id == ids["B"]:
			mixed = append(mixed, fenced.JobEnd{Ref: got[id].Ref(), Kind: fenced.EndFail, Error: "no", Discard: true})
		case plain == 0:
			plain++
			mixed = append(mixed, fenced.JobEnd{Ref: got[id].Ref(), Kind: fenced.EndComplete})
		default:
			completes = append(completes, fenced.JobEnd{Ref: got[id].Ref(), Kind: fenced.EndComplete})
		}
	}
	for _, batch := range [][]fenced.JobEnd{completes, mixed} {
		errs, _, err := c.EndJobs(ctx(t), nil, batch)
		must(t, err, "end the batch")
		for _, e := range errs {
			must(t, e, "an end of the batch")
		}
	}
	if s := stateOf(t, c, ids["after-A"]).State; s != fenced.JobQueued {
		t.Fatalf("after-A = %s after a batch of completions, want queued", s)
	}
	if j := stateOf(t, c, ids["after-B"]); j.State != fenced.JobCancelled || j.LastError != driver.TaskCancelError {
		t.Fatalf("after-B = %s %q after B failed in a mixed batch, want cancelled by its workflow", j.State, j.LastError)
	}
}

// TestWorkflowAdditionAndADependencyFinishingMeanwhile: a dependency's
// completion begun while an addition naming it is not committed waits for
// it (on the dependency's row, which the addition read share-locked), and
// then releases the task it added.
func TestWorkflowAdditionAndADependencyFinishingMeanwhile(t *testing.T) {
	t.Parallel()
	url, c := setup(t)
	w, err := c.EnqueueWorkflow(ctx(t), nil, fenced.WorkflowParams{Name: "meanwhile", Tasks: []fenced.WorkflowTaskParams{
		task("adder"), task("dep"),
	}})
	must(t, err, "enqueue workflow")
	ids := taskIDs(w)
	got := claimAll(t, c, time.Minute)
	adder, dep := got[ids["adder"]], got[ids["dep"]]
	done := make(chan error, 1)
	must(t, c.JobTx(ctx(t), adder.Ref(), func(tx fenced.Tx) error {
		if _, err := c.AddWorkflowTasks(ctx(t), tx, adder.Ref(), []fenced.WorkflowTaskParams{task("new", "dep")}); err != nil {
			return err
		}
		go func() { done <- c.CompleteJob(ctx(t), dep.Ref(), nil) }()
		testdb.MySQLWaitBlocked(t, url)
		return nil
	}), "add in a JobTx")
	must(t, <-done, "complete dep")
	w, err = c.GetWorkflow(ctx(t), w.ID)
	must(t, err, "get workflow")
	if s := stateOf(t, c, taskIDs(w)["new"]).State; s != fenced.JobQueued {
		t.Fatalf("new = %s after its dependency completed, want queued", s)
	}
}

// TestWorkflowRecoveryEndsTasks: recovery that fails a task out of
// attempts, or cancels one asked to stop, resolves its dependents in its
// transaction.
func TestWorkflowRecoveryEndsTasks(t *testing.T) {
	t.Parallel()
	url, c := setup(t)
	once := task("once")
	once.Job.MaxAttempts = 1
	w, err := c.EnqueueWorkflow(ctx(t), nil, fenced.WorkflowParams{Name: "recovered", Tasks: []fenced.WorkflowTaskParams{
		once, task("stop"), task("after-once", "once"), task("after-stop", "stop"),
	}})
	must(t, err, "enqueue workflow")
	ids := taskIDs(w)
	claimAll(t, c, time.Minute)
	if _, err := c.CancelJob(ctx(t), ids["stop"]); err != nil {
		t.Fatalf("cancel stop: %v", err)
	}
	testdb.MySQLExec(t, url, `UPDATE fenced_jobs SET lease_expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE state = 'running'`)
	n, err := c.RecoverJobs(ctx(t), nil, 100, fenced.Backoff{Base: time.Microsecond, Max: time.Microsecond, Jitter: -1})
	if err != nil || n != 2 {
		t.Fatalf("recover = %d, %v", n, err)
	}
	for name, want := range map[string]fenced.JobState{"once": fenced.JobFailed, "stop": fenced.JobCancelled,
		"after-once": fenced.JobCancelled, "after-stop": fenced.JobCancelled} {
		if s := stateOf(t, c, ids[name]).State; s != want {
			t.Fatalf("%s = %s after recovery, want %s", name, s, want)
		}
	}
}
