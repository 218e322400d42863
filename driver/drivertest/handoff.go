package drivertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
)

// handOff ends ends through the driver's hand-off to owner for kind "k",
// as a worker's completer does.
func (e *env) handOff(t *testing.T, h driver.TaskHandoff, owner string, ends ...fenced.JobEnd) ([]error, []*fenced.Job) {
	t.Helper()
	errs, taken, spare := e.handOffSpare(t, h, owner, nil, ends...)
	if len(spare) > 0 {
		t.Fatalf("without spare slots, %d attempts were handed to spare slots", len(spare))
	}
	return errs, taken
}

// handOffSpare is handOff with spare slots (driver.Handoff.Spare); it
// returns the attempts handed to them too.
func (e *env) handOffSpare(t *testing.T, h driver.TaskHandoff, owner string, spare map[string]int, ends ...fenced.JobEnd) ([]error, []*fenced.Job, []*fenced.Job) {
	t.Helper()
	errs, _, taken, more, err := h.EndJobsHandingOff(ctx(t), ends, driver.Handoff{Owner: owner, TTL: long, Kinds: []string{"k"}, Spare: spare})
	wantNoErr(t, err, "end jobs handing off")
	if len(errs) != len(ends) || len(taken) != len(ends) {
		t.Fatalf("%d ends answered with %d errors and %d taken", len(ends), len(errs), len(taken))
	}
	return errs, taken, more
}

// wantRunningFor fails unless j is a first attempt running for owner
// with a lease.
func wantRunningFor(t *testing.T, j *fenced.Job, owner string) {
	t.Helper()
	if j == nil || j.State != fenced.JobRunning || j.Owner != owner || j.Attempt != 1 || j.Fence < 1 || j.LeaseExpiresAt == nil {
		t.Fatalf("handed off to %s: %+v", owner, j)
	}
}

func complete(j *fenced.Job) fenced.JobEnd {
	return fenced.JobEnd{Ref: j.Ref(), Kind: fenced.EndComplete}
}

// runHandoff checks driver.TaskHandoff (docs/design.md §6.18): a
// completion starts a dependent it released for its worker, only as a
// claim would have, only from the current attempt, one per completion.
func runHandoff(t *testing.T, b Backend) {
	// A worker runs chains to their end with the hand-off and without
	// it: each task after its dependency finished, and the handed-off
	// attempts counted (none without it, or on a backend without it).
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("AWorkerRunsChains/NoHandoff=%v", off), func(t *testing.T) {
			t.Parallel()
			e := setup(t, b)
			var mu sync.Mutex
			ran := map[int64]int{} // attempts by job
			w := e.newWorker(t, fenced.WorkerConfig{PollInterval: 10 * time.Millisecond, NoHandoff: off,
				Queues: map[string]int{fenced.DefaultQueue: 4}}, map[string]fenced.Handler{"k": func(ctx context.Context, j *fenced.JobRun) error {
				deps, err := e.c.TaskDependencies(ctx, j.Job.ID)
				if err != nil {
					return err
				}
				for _, d := range deps {
					if d.State != fenced.JobSucceeded {
						return fmt.Errorf("task %s ran with dependency %s %s", j.Job.TaskName, d.Name, d.State)
					}
				}
				mu.Lock()
				ran[j.Job.ID]++
				mu.Unlock()
				return nil
			}})
			var flows []*fenced.Workflow
			for range 3 {
				flows = append(flows, e.workflow(t, task("t0"), task("t1", "t0"), task("t2", "t1"), task("t3", "t2"), task("t4", "t3")))
			}
			for _, f := range flows {
				for _, k := range f.Tasks {
					e.waitState(t, k.JobID, fenced.JobSucceeded)
				}
			}
			stopWorker(t, w)
			s := w.Stats()
			mu.Lock()
			defer mu.Unlock()
			for _, f := range flows {
				for _, k := range f.Tasks {
					if ran[k.JobID] != 1 {
						t.Fatalf("task %s of workflow %d ran %d times, want once", k.Name, f.ID, ran[k.JobID])
					}
				}
			}
			_, hands := e.d.(driver.TaskHandoff)
			switch {
			case s.Claimed != 15 || s.Succeeded != 15:
				t.Fatalf("stats = %+v, want 15 claimed and succeeded", s)
			case (off || !hands) && s.HandedOff != 0:
				t.Fatalf("stats = %+v: handed off without the hand-off", s)
			case !off && hands && s.HandedOff == 0:
				// Each chain's t1…t4 is released by its dependency's
				// completion on this worker, in its queue, of its kind.
				t.Fatalf("stats = %+v: nothing handed off", s)
			}
		})
	}
	handoff := func(t *testing.T) (*env, driver.TaskHandoff) {
		e := setup(t, b)
		h, ok := e.d.(driver.TaskHandoff)
		if !ok {
			t.Skip("the backend hands off no task: every released task is queued")
		}
		return e, h
	}
	t.Run("ACompletionStartsTheTaskItReleased", func(t *testing.T) {
		t.Parallel()
		e, h := handoff(t)
		w := e.workflow(t, task("a"), task("b", "a"), task("c"))
		got := e.claimTasks(t, "A", long)
		wantClaimed(t, got, "a", "c")
		// In one batch with a failure (the statement of every kind of end).
		fail := fenced.JobEnd{Ref: got["c"].Ref(), Kind: fenced.EndFail, Error: "again"}
		errs, taken := e.handOff(t, h, "A", complete(got["a"]), fail)
		wantNoErr(t, errors.Join(errs...), "complete a, fail c")
		b := taken[0]
		if b == nil || b.TaskName != "b" || b.State != fenced.JobRunning || b.Owner != "A" || b.Attempt != 1 || b.Fence < 1 || b.LeaseExpiresAt == nil {
			t.Fatalf("handed to a's completion: %+v", b)
		}
		if b.Kind != "k" || b.Queue != fenced.DefaultQueue || b.WorkflowID != w.ID || b.AttemptedAt == nil || b.DecidedAt.IsZero() || b.CreatedAt.IsZero() {
			t.Fatalf("handed to a's completion, not as its row has it: %+v", b)
		}
		if taken[1] != nil {
			t.Fatalf("c's failure was handed %+v", taken[1])
		}
		e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"a": fenced.JobSucceeded, "b": fenced.JobRunning, "c": fenced.JobQueued})
		wantClaimed(t, e.claimTasks(t, "B", long), "c") // b was handed off
		// The handed-off attempt is fenced as a claimed one: an older fence
		// cannot end it, its own can.
		old := b.Ref()
		old.Fence--
		err := e.c.CompleteJob(ctx(t), old, nil)
		if !errors.Is(err, fenced.ErrStale) {
			t.Fatalf("completing b under fence %d: %v, want stale", old.Fence, err)
		}
		wantNoErr(t, e.c.CompleteJob(ctx(t), b.Ref(), nil), "complete b")
		e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"b": fenced.JobSucceeded})
	})
	t.Run("AFanInIsHandedToItsLastDependency", func(t *testing.T) {
		t.Parallel()
		e, h := handoff(t)
		w := e.workflow(t, task("x"), task("y"), task("z", "x", "y"))
		got := e.claimTasks(t, "A", long)
		errs, taken := e.handOff(t, h, "A", complete(got["x"]))
		wantNoErr(t, errs[0], "complete x")
		if taken[0] != nil {
			t.Fatalf("x's completion, with y running, was handed %+v", taken[0])
		}
		e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"z": fenced.JobPending})
		errs, taken = e.handOff(t, h, "A", complete(got["y"]))
		wantNoErr(t, errs[0], "complete y")
		if taken[0] == nil || taken[0].TaskName != "z" {
			t.Fatalf("y's completion was handed %+v, want z", taken[0])
		}
	})
	t.Run("AStaleCompletionHandsOffNothing", func(t *testing.T) {
		t.Parallel()
		e, h := handoff(t)
		w := e.workflow(t, task("a"), task("b", "a"), task("c", "a"))
		stale := e.claimTasks(t, "A", 50*time.Millisecond)["a"]
		e.recoverExpired(t, stale.ID)
		// Recovered and queued: the stale completion writes nothing, and
		// starts nothing, in its slot or in spare ones.
		spare := map[string]int{fenced.DefaultQueue: 5}
		errs, taken, more := e.handOffSpare(t, h, "A", spare, complete(stale))
		wantNoSpare(t, more)
		wantStale(t, errs[0], stale.Fence, stale.Fence, "", fenced.ReasonNotRunning)
		if taken[0] != nil {
			t.Fatalf("a stale completion was handed %+v", taken[0])
		}
		time.Sleep(5 * time.Millisecond) // past recovery's 1µs backoff
		current := e.claimTasks(t, "B", long)["a"]
		if current == nil {
			t.Fatal("a was not claimed again")
		}
		// While the new attempt runs.
		errs, taken, more = e.handOffSpare(t, h, "A", spare, complete(stale))
		wantNoSpare(t, more)
		wantStale(t, errs[0], stale.Fence, current.Fence, "B", fenced.ReasonSuperseded)
		if taken[0] != nil {
			t.Fatalf("a superseded completion was handed %+v", taken[0])
		}
		e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"a": fenced.JobRunning, "b": fenced.JobPending, "c": fenced.JobPending})
		errs, taken = e.handOff(t, h, "B", complete(current))
		wantNoErr(t, errs[0], "complete a")
		if taken[0] == nil || taken[0].TaskName != "b" || taken[0].Owner != "B" {
			t.Fatalf("the current completion was handed %+v", taken[0])
		}
		// After it completed: the stale completion again hands off nothing.
		errs, taken, more = e.handOffSpare(t, h, "A", spare, complete(stale))
		wantNoSpare(t, more)
		wantStale(t, errs[0], stale.Fence, current.Fence, "", fenced.ReasonSuperseded)
		if taken[0] != nil {
			t.Fatalf("a late completion was handed %+v", taken[0])
		}
	})
	t.Run("OnlyWhatAClaimWouldStartIsHandedOff", func(t *testing.T) {
		t.Parallel()
		e, h := handoff(t)
		kinded := func(name, kind string, deps ...string) fenced.WorkflowTaskParams {
			k := task(name, deps...)
			k.Job.Kind = kind
			return k
		}
		other := task("b", "a")
		other.Job.Queue = "other"
		keyed := task("b", "a")
		keyed.Job.ConcurrencyKey = "key"
		later := task("b", "a")
		later.Job.Delay = time.Hour
		for _, c := range []struct {
			name string
			b    fenced.WorkflowTaskParams
		}{
			{"a kind the worker does not run", kinded("b", "other", "a")},
			{"another queue", other},
			{"a concurrency key", keyed},
			{"not due", later},
		} {
			w := e.workflow(t, task("a"), c.b)
			a := e.claimTasks(t, "A", long)["a"]
			errs, taken := e.handOff(t, h, "A", complete(a))
			wantNoErr(t, errs[0], "complete a")
			if taken[0] != nil {
				t.Fatalf("%s: handed off %+v", c.name, taken[0])
			}
			e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"b": fenced.JobQueued})
			wantNoErr(t, e.c.DeleteWorkflow(ctx(t), w.ID), "delete workflow")
		}
		// A paused queue, and one under a global limit.
		for _, c := range []struct {
			name       string
			hold, undo func() error
		}{
			{"a paused queue", func() error { _, _, err := e.c.PauseQueue(ctx(t), fenced.DefaultQueue); return err },
				func() error { _, err := e.c.ResumeQueue(ctx(t), fenced.DefaultQueue); return err }},
			{"a global limit", func() error {
				_, err := e.c.SetJobLimit(ctx(t), fenced.JobLimit{Queue: fenced.DefaultQueue, Global: 10})
				return err
			}, func() error { return e.c.DeleteJobLimit(ctx(t), fenced.DefaultQueue, "", "") }},
		} {
			w := e.workflow(t, task("a"), task("b", "a"), task("c", "a"))
			a := e.claimTasks(t, "A", long)["a"]
			wantNoErr(t, c.hold(), c.name)
			errs, taken, more := e.handOffSpare(t, h, "A", map[string]int{fenced.DefaultQueue: 5}, complete(a))
			wantNoErr(t, errs[0], "complete a")
			if taken[0] != nil {
				t.Fatalf("%s: handed off %+v", c.name, taken[0])
			}
			wantNoSpare(t, more)
			e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"b": fenced.JobQueued, "c": fenced.JobQueued})
			wantNoErr(t, c.undo(), "undo "+c.name)
			wantNoErr(t, e.c.DeleteWorkflow(ctx(t), w.ID), "delete workflow")
		}
	})
	t.Run("ACompletionIsHandedOneTask", func(t *testing.T) {
		t.Parallel()
		e, h := handoff(t)
		w := e.workflow(t, task("split"), task("p1", "split"), task("p2", "split"), task("p3", "split"))
		split := e.claimTasks(t, "A", long)["split"]
		errs, taken := e.handOff(t, h, "A", complete(split))
		wantNoErr(t, errs[0], "complete split")
		if taken[0] == nil {
			t.Fatal("split's completion was handed nothing")
		}
		states := e.taskStates(t, w.ID)
		running, queued := 0, 0
		for _, p := range []string{"p1", "p2", "p3"} {
			switch states[p] {
			case fenced.JobRunning:
				running++
			case fenced.JobQueued:
				queued++
			}
		}
		if running != 1 || queued != 2 || states[taken[0].TaskName] != fenced.JobRunning {
			t.Fatalf("after split: %v, handed %s", states, taken[0].TaskName)
		}
		wantClaimed(t, e.claimTasks(t, "B", long), slicesWithout([]string{"p1", "p2", "p3"}, taken[0].TaskName)...)
	})
	t.Run("SpareSlotsTakeMoreOfARelease", func(t *testing.T) {
		t.Parallel()
		e, h := handoff(t)
		// Five parts in the completion's queue, one in another, one keyed:
		// the completion's slot takes one part, three spare slots three
		// more; the rest is queued for claims (a spare slot, too, starts
		// only what a claim of its queue would).
		tasks := []fenced.WorkflowTaskParams{task("split")}
		for _, p := range []string{"p1", "p2", "p3", "p4", "p5"} {
			tasks = append(tasks, task(p, "split"))
		}
		other := task("o", "split")
		other.Job.Queue = "other"
		keyed := task("k", "split")
		keyed.Job.ConcurrencyKey = "key"
		w := e.workflow(t, append(tasks, other, keyed)...)
		split := e.claimTasks(t, "A", long)["split"]
		errs, taken, more := e.handOffSpare(t, h, "A", map[string]int{fenced.DefaultQueue: 3, "other": 5}, complete(split))
		wantNoErr(t, errs[0], "complete split")
		wantRunningFor(t, taken[0], "A")
		if len(more) != 3 {
			t.Fatalf("3 spare slots were handed %d attempts", len(more))
		}
		handed := []string{taken[0].TaskName}
		for _, j := range more {
			wantRunningFor(t, j, "A")
			if j.Queue != fenced.DefaultQueue {
				t.Fatalf("a spare slot of %s was handed %s of queue %s", fenced.DefaultQueue, j.TaskName, j.Queue)
			}
			handed = append(handed, j.TaskName)
		}
		states := e.taskStates(t, w.ID)
		var queued []string
		for _, p := range []string{"p1", "p2", "p3", "p4", "p5"} {
			if !slices.Contains(handed, p) {
				queued = append(queued, p)
			}
		}
		if len(queued) != 1 || states[queued[0]] != fenced.JobQueued || states["o"] != fenced.JobQueued || states["k"] != fenced.JobQueued {
			t.Fatalf("after split, handed %v: %v", handed, states)
		}
		for _, p := range handed {
			if states[p] != fenced.JobRunning {
				t.Fatalf("handed %v: %s is %s", handed, p, states[p])
			}
		}
		rest := []string{queued[0], "k"}
		slices.Sort(rest)
		wantClaimed(t, e.claimTasks(t, "B", long), rest...)
		// Each is fenced as a claimed attempt.
		for _, j := range more {
			wantNoErr(t, e.c.CompleteJob(ctx(t), j.Ref(), nil), "complete "+j.TaskName)
		}
	})
	t.Run("AWorkerRunsAFanOutInSpareSlots", func(t *testing.T) {
		t.Parallel()
		e, _ := handoff(t)
		// The worker's first claim takes the split, fewer jobs than it had
		// slots for (the queue is drained); a claim holds two slots at
		// most (FetchBatch 2), so that at least five of the eight are free
		// when the split completes, whatever the claims do then. Its
		// completion starts its five parts (one in its slot, four in spare
		// ones), the last part's completion the join: none is claimed.
		tasks := []fenced.WorkflowTaskParams{task("split")}
		parts := []string{"split"}
		for _, p := range []string{"p1", "p2", "p3", "p4", "p5"} {
			tasks, parts = append(tasks, task(p, "split")), append(parts, p)
		}
		f := e.workflow(t, append(tasks, task("join", parts[1:]...))...)
		var mu sync.Mutex
		ran := map[string]int{}
		w := e.newWorker(t, fenced.WorkerConfig{PollInterval: 10 * time.Millisecond, FetchBatch: 2, Queues: map[string]int{fenced.DefaultQueue: 8}},
			map[string]fenced.Handler{"k": func(ctx context.Context, j *fenced.JobRun) error {
				mu.Lock()
				ran[j.Job.TaskName]++
				mu.Unlock()
				return nil
			}})
		for _, k := range f.Tasks {
			e.waitState(t, k.JobID, fenced.JobSucceeded)
		}
		stopWorker(t, w)
		mu.Lock()
		defer mu.Unlock()
		for _, k := range f.Tasks {
			if ran[k.Name] != 1 {
				t.Fatalf("task %s ran %d times, want once", k.Name, ran[k.Name])
			}
		}
		if s := w.Stats(); s.Claimed != 7 || s.Succeeded != 7 || s.HandedOff != 6 {
			t.Fatalf("stats = %+v, want 7 claimed and succeeded, 6 of them handed off", s)
		}
	})
	t.Run("RacingCompletionsStartAFanInOnceInSpareSlots", func(t *testing.T) {
		t.Parallel()
		e, h := handoff(t)
		runRacingSpare(t, e, h)
	})
	t.Run("RacingCompletionsHandAFanInOffOnce", func(t *testing.T) {
		t.Parallel()
		e, h := handoff(t)
		for round := range 20 {
			w := e.workflow(t, task("x"), task("y"), task("z", "x", "y"))
			got := e.claimTasks(t, "A", long)
			wantClaimed(t, got, "x", "y")
			taken, spare := raceCompletions(t, h, got, nil)
			wantNoSpare(t, append(spare[0], spare[1]...))
			if (taken[0] == nil) == (taken[1] == nil) {
				t.Fatalf("round %d: z handed to x's completion %+v and y's %+v: want exactly one", round, taken[0], taken[1])
			}
			e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"z": fenced.JobRunning})
			if again := e.claimTasks(t, "A", long); len(again) != 0 {
				t.Fatalf("round %d: claimed %v after z was handed off", round, taskNames(again))
			}
		}
	})
}

// runRacingSpare: two completions that race, each with spare slots,
// start a fan-in both release once, in a spare slot (for neither is it the
// first dependent, which its own slot takes).
func runRacingSpare(t *testing.T, e *env, h driver.TaskHandoff) {
	for round := range 20 {
		w := e.workflow(t, task("x"), task("y"), task("a", "x"), task("b", "y"), task("z", "x", "y"))
		got := e.claimTasks(t, "A", long)
		wantClaimed(t, got, "x", "y")
		taken, spare := raceCompletions(t, h, got, map[string]int{fenced.DefaultQueue: 2})
		count := map[string]int{}
		for i := range taken {
			for _, j := range append(spare[i], taken[i]) {
				if j != nil {
					count[j.TaskName]++
				}
			}
		}
		if count["a"] != 1 || count["b"] != 1 || count["z"] != 1 || len(count) != 3 {
			t.Fatalf("round %d: started %v, want a, b and z once each", round, count)
		}
		e.wantTaskStates(t, w.ID, map[string]fenced.JobState{"a": fenced.JobRunning, "b": fenced.JobRunning, "z": fenced.JobRunning})
		if again := e.claimTasks(t, "A", long); len(again) != 0 {
			t.Fatalf("round %d: claimed %v after every released task started", round, taskNames(again))
		}
	}
}

// raceCompletions completes got's x and y at once, each through the
// hand-off to an owner of its name with spare slots spare, and returns
// what each was handed: in its slot, and in spare slots.
func raceCompletions(t *testing.T, h driver.TaskHandoff, got map[string]*fenced.Job, spare map[string]int) (taken [2]*fenced.Job, spared [2][]*fenced.Job) {
	t.Helper()
	var wg sync.WaitGroup
	var errs [2]error
	for i, name := range []string{"x", "y"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var es []error
			var tk []*fenced.Job
			es, _, tk, spared[i], errs[i] = h.EndJobsHandingOff(ctx(t), []fenced.JobEnd{complete(got[name])},
				driver.Handoff{Owner: name, TTL: long, Kinds: []string{"k"}, Spare: spare})
			if errs[i] == nil {
				errs[i], taken[i] = es[0], tk[0]
			}
		}()
	}
	wg.Wait()
	wantNoErr(t, errors.Join(errs[:]...), "complete x and y")
	return taken, spared
}

// slicesWithout is names without drop.
func slicesWithout(names []string, drop string) []string {
	var out []string
	for _, n := range names {
		if n != drop {
			out = append(out, n)
		}
	}
	return out
}

// wantNoSpare fails when attempts were handed to spare slots.
func wantNoSpare(t *testing.T, spare []*fenced.Job) {
	t.Helper()
	if len(spare) > 0 {
		t.Fatalf("handed to spare slots: %+v", spare[0])
	}
}
