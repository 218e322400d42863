package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fenced/fenced"
)

// WorkloadWorkflow: the run enqueues workflows (docs/design.md §6.18) —
// chains, diamonds and fan-outs, some of which add their parts at run time
// — whose tasks each write the count workload's effect and a workflow
// ledger row in the job-fenced transaction that completes them. The
// workflow checker verifies that every task ran its effect once, after
// its dependencies' effects, and that every workflow succeeded. It needs a
// backend with workflows (fenced.CapWorkflows).
const WorkloadWorkflow = "workflow"

// WorkflowKind is the kind of the workflow workload's tasks.
const WorkflowKind = "chaos.workflow"

// The shapes of the workload's workflows, which are also their names: the
// checker reads a workflow's shape from its name and holds its tasks and
// edges to it.
const (
	// shapeChain: t0 → t1 → … → t9.
	shapeChain = "chain"
	// shapeDiamond: top → left, right → bottom.
	shapeDiamond = "diamond"
	// shapeFanout: root → p00 … p49 → sink, all enqueued at once.
	shapeFanout = "fanout"
	// shapeSplit: the same graph as shapeFanout, but enqueued as its root
	// alone; the root's attempt adds p00 … p49 and sink (AddWorkflowTasks)
	// in the job-fenced transaction that completes it.
	shapeSplit = "split"
)

// workflowShapes are the shapes in the order the checker reports them.
var workflowShapes = []string{shapeChain, shapeDiamond, shapeFanout, shapeSplit}

const (
	chainLength = 10
	fanoutParts = 50
)

// shapeGraph is the whole graph of a shape once it has run: each task's
// name and the names of its dependencies (for shapeSplit, the parts its
// root adds included).
func shapeGraph(shape string) (map[string][]string, bool) {
	g := map[string][]string{}
	switch shape {
	case shapeChain:
		g["t0"] = nil
		for i := 1; i < chainLength; i++ {
			g[fmt.Sprintf("t%d", i)] = []string{fmt.Sprintf("t%d", i-1)}
		}
	case shapeDiamond:
		g["top"], g["left"], g["right"] = nil, []string{"top"}, []string{"top"}
		g["bottom"] = []string{"left", "right"}
	case shapeFanout, shapeSplit:
		g["root"] = nil
		for _, t := range splitParts() {
			g[t.Name] = t.DependsOn
		}
	default:
		return nil, false
	}
	return g, true
}

// partName is the name of fan-out part i.
func partName(i int) string { return fmt.Sprintf("p%02d", i) }

// splitParts are the tasks a fan-out adds below its root: the parts, each
// after root, and sink, after every part. Their jobs are filled in by
// taskJob.
func splitParts() []fenced.WorkflowTaskParams {
	ts := make([]fenced.WorkflowTaskParams, 0, fanoutParts+1)
	sink := fenced.WorkflowTaskParams{Name: "sink"}
	for i := range fanoutParts {
		ts = append(ts, fenced.WorkflowTaskParams{Name: partName(i), DependsOn: []string{"root"}})
		sink.DependsOn = append(sink.DependsOn, partName(i))
	}
	return append(ts, sink)
}

// workflowSize is how many tasks a workflow of shape has once it has run.
func workflowSize(shape string) int {
	g, _ := shapeGraph(shape)
	return len(g)
}

// workflowArgs are a task's arguments: the counter its effect increments,
// and for a split workflow's root the number of counters, from which it
// draws its parts' (the worker processes are not told it otherwise): a
// root with Keys > 0 adds the parts.
type workflowArgs struct {
	Key  string `json:"key"`
	Keys int    `json:"keys,omitempty"`
}

// taskJob is a task's job: on the run's queue, incrementing one of keys
// counters drawn from rng; a split workflow's root (split) adds its parts.
func taskJob(rng *rand.Rand, keys int, split bool) fenced.EnqueueParams {
	a := workflowArgs{Key: counterKey(rng.IntN(keys))}
	if split {
		a.Keys = keys
	}
	return fenced.EnqueueParams{Kind: WorkflowKind, Queue: queue, MaxAttempts: jobAttempts, Args: a}
}

// drawShape draws a workflow's shape: chains and diamonds three times as
// often as each kind of fan-out, which are five to thirteen times their
// size.
func drawShape(rng *rand.Rand) string {
	switch n := rng.IntN(8); {
	case n < 3:
		return shapeChain
	case n < 6:
		return shapeDiamond
	case n < 7:
		return shapeFanout
	}
	return shapeSplit
}

// workflowParams is a workflow of shape as enqueued: every task of its
// graph, or for shapeSplit its root alone.
func workflowParams(rng *rand.Rand, keys int, shape string) fenced.WorkflowParams {
	w := fenced.WorkflowParams{Name: shape}
	if shape == shapeSplit {
		w.Tasks = []fenced.WorkflowTaskParams{{Name: "root", Job: taskJob(rng, keys, true)}}
		return w
	}
	g, _ := shapeGraph(shape)
	names := make([]string, 0, len(g))
	for name := range g {
		names = append(names, name)
	}
	slices.Sort(names) // map order is random; the seed's draws must not depend on it
	for _, name := range names {
		w.Tasks = append(w.Tasks, fenced.WorkflowTaskParams{Name: name, DependsOn: g[name], Job: taskJob(rng, keys, false)})
	}
	return w
}

// workflowSchemaSQL creates the workflow workload's ledger: one row per
// committed effect of a task, naming its workflow, job, task and the
// attempt's fence. The row's id, from a sequence, orders the rows for the
// checker (checkworkflow.go says why that order is sound); at is the
// database clock, for people reading the evidence.
func workflowSchemaSQL(d *dialect) []string {
	return []string{fmt.Sprintf(`CREATE TABLE chaos_workflow_ledger (
    id          %s,
    workflow_id %s NOT NULL,
    job_id      %[2]s NOT NULL,
    task        %s NOT NULL,
    fence       %[2]s NOT NULL,
    proc        %[3]s NOT NULL,
    at          %s)%s`, d.id, d.bigint, d.text, d.at, d.tableEnd),
		`CREATE INDEX chaos_workflow_ledger_job ON chaos_workflow_ledger (job_id)`}
}

// workflowLedgerSQL inserts a task's ledger row, with ? placeholders
// (dialect.sql).
const workflowLedgerSQL = `INSERT INTO chaos_workflow_ledger (workflow_id, job_id, task, fence, proc) VALUES (?, ?, ?, ?, ?)`

// enqueueWorkflows enqueues workflows at the configured rate, in tasks a
// second (a workflow counts all the tasks it will have), each in one
// EnqueueWorkflow call, until ctx ends. A call that fails (the server is
// restarting) is dropped, as the enqueuer drops a failed batch: its
// workflow may exist or not, and the checkers hold every workflow in the
// database to its shape.
func (e *enqueuer) enqueueWorkflows(ctx context.Context, r *run) {
	rng := rand.New(rand.NewPCG(r.o.Seed, 0x776631))
	per := max(1, r.o.JobsPerSecond/10)
	credit := 0
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for credit += per; credit > 0; {
			shape := drawShape(rng)
			credit -= workflowSize(shape)
			ectx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			w, err := r.c.EnqueueWorkflow(ectx, nil, workflowParams(rng, r.o.Keys, shape))
			cancel()
			if err != nil {
				r.logf("enqueue workflow: %v", err)
				break
			}
			e.n.Add(int64(len(w.Tasks)))
			e.mu.Lock()
			e.workflows = append(e.workflows, enqueuedWorkflow{id: w.ID, shape: shape})
			for _, t := range w.Tasks {
				e.ids = append(e.ids, t.JobID)
			}
			e.mu.Unlock()
		}
	}
}

// enqueuedWorkflow is a workflow whose enqueue returned.
type enqueuedWorkflow struct {
	id    int64
	shape string
}

// handleWorkflow runs one attempt of a task: it works 50–400 ms (where the
// nemesis's pauses land), fails on purpose one attempt in twenty (it is
// retried; its dependents stay pending meanwhile), and otherwise, in one
// job-fenced transaction, increments its counter with the count
// workload's ledger row, inserts its workflow ledger row, adds a split
// workflow's parts when it is that workflow's root, and completes the
// task. The transaction carries the attempt's fence, so once the attempt
// is stale it is refused whole: its effect, its additions and its
// completion, which is what releases its dependents. Half the attempts
// ignore their context's end, so that a paused attempt's writes reach the
// database and must be refused.
func (h *jobHandler) handleWorkflow(ctx context.Context, run *fenced.JobRun) error {
	var args workflowArgs
	if err := json.Unmarshal(run.Args, &args); err != nil {
		return fenced.Discard(err)
	}
	var work time.Duration
	var stubborn, fail bool
	var parts []fenced.WorkflowTaskParams
	h.draw(func(r *rand.Rand) {
		work = time.Duration(50+r.IntN(350)) * time.Millisecond
		stubborn = r.IntN(2) == 0
		fail = r.IntN(20) == 0
		if args.Keys > 0 {
			parts = splitParts()
			for i := range parts {
				parts[i].Job = taskJob(r, args.Keys, false)
			}
		}
	})
	if stubborn {
		ctx = context.WithoutCancel(ctx)
	}
	time.Sleep(work) // the work; a pause here outlives the lease
	call := time.Now()
	if fail {
		h.rec.job(run.ID, run.Fence, call, jobFailed)
		return errors.New(errDeliberate)
	}
	err := run.Tx(ctx, func(tx fenced.Tx) error {
		n, err := h.increment(ctx, tx, run, args.Key)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, h.d.sql(workflowLedgerSQL), run.WorkflowID, run.ID, run.TaskName, run.Fence, h.rec.proc); err != nil {
			return err
		}
		if parts != nil {
			if _, err := h.c.AddWorkflowTasks(ctx, tx, run.Ref(), parts); err != nil {
				return err
			}
		}
		return run.CompleteTx(ctx, tx, map[string]int64{"before": n})
	})
	h.rec.job(run.ID, run.Fence, call, jobResult(err))
	return err
}
