package jobbench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/pgdriver"
)

// A workflow burn-down inserts its jobs as the tasks of workflows
// (docs/design.md §6.18), one EnqueueWorkflow each, and works them as a
// plain burn-down does: FanOut n makes each workflow a split task, n parts
// after it and a join after them all (1→n→1); Chain n makes it n tasks, each
// after the one before. The run's jobs are rounded down to whole workflows
// (at least one).

// workflowSize is the tasks of one workflow of the run, 0 for a run of
// plain jobs.
func (o Options) workflowSize() int {
	switch {
	case o.FanOut > 0:
		return o.FanOut + 2
	case o.Chain > 0:
		return o.Chain
	}
	return 0
}

// workflowTasks are the tasks of one workflow, numbered from next+1 in
// their args as plain jobs are.
func (in *inserter) workflowTasks(next int) []fenced.WorkflowTaskParams {
	job := func(n int) fenced.EnqueueParams {
		args := strconv.AppendInt([]byte(`{"num":`), int64(n), 10)
		return fenced.EnqueueParams{Kind: Kind, Queue: in.queue, Args: json.RawMessage(append(args, '}'))}
	}
	var tasks []fenced.WorkflowTaskParams
	if in.fanOut > 0 {
		tasks = append(tasks, fenced.WorkflowTaskParams{Name: "split", Job: job(next + 1)})
		parts := make([]string, in.fanOut)
		for i := range parts {
			parts[i] = "p" + strconv.Itoa(i)
			tasks = append(tasks, fenced.WorkflowTaskParams{Name: parts[i], Job: job(next + 2 + i), DependsOn: []string{"split"}})
		}
		return append(tasks, fenced.WorkflowTaskParams{Name: "join", Job: job(next + 2 + in.fanOut), DependsOn: parts})
	}
	for i := range in.chain {
		t := fenced.WorkflowTaskParams{Name: "t" + strconv.Itoa(i), Job: job(next + 1 + i)}
		if i > 0 {
			t.DependsOn = []string{"t" + strconv.Itoa(i-1)}
		}
		tasks = append(tasks, t)
	}
	return tasks
}

// insertWorkflows enqueues n jobs as whole workflows (n a multiple of
// their size), remembering each workflow's id for the cleanup.
func (in *inserter) insertWorkflows(ctx context.Context, n int) error {
	size := in.fanOut + 2
	if in.fanOut == 0 {
		size = in.chain
	}
	for ; n > 0; n -= size {
		w, err := in.c.EnqueueWorkflow(ctx, nil, fenced.WorkflowParams{Name: "bench", Tasks: in.workflowTasks(in.next)})
		if err != nil {
			return fmt.Errorf("enqueue workflow: %w", err)
		}
		in.next += size
		in.workflows = append(in.workflows, w.ID)
		in.done.Add(int64(size))
	}
	return nil
}

// deleteWorkflows deletes the run's workflows, whole: on PostgreSQL in one
// statement (their tasks with them; the cleanup may then truncate the
// table), elsewhere one DeleteWorkflow each.
func (b *bench) deleteWorkflows(ctx context.Context, ids []int64) error {
	if d, ok := b.db.d.(*pgdriver.Driver); ok {
		_, err := d.Pool().Exec(ctx, `WITH j AS (DELETE FROM fenced_jobs WHERE workflow_id = ANY ($1::bigint[]))
DELETE FROM fenced_workflows WHERE id = ANY ($1::bigint[])`, ids)
		if err != nil {
			return fmt.Errorf("delete the benchmark's workflows: %w", err)
		}
		return nil
	}
	for _, id := range ids {
		if err := b.db.c.DeleteWorkflow(ctx, id); err != nil {
			return fmt.Errorf("delete the benchmark's workflow %d: %w", id, err)
		}
	}
	return nil
}
