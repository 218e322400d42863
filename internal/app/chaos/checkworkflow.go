package chaos

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fenced/fenced"
)

// The workflow checker judges the workflow workload from the database once
// the run has drained: the workflows (their derived state, read with
// ListWorkflows), their tasks with the fence each succeeded under, the
// dependency edges, and the committed workflow ledger (one row per effect:
// handleWorkflow writes it in the job-fenced transaction that completes
// the task).
//
//   - shape: every workflow the enqueuer was told about exists; each has
//     exactly the tasks and edges of its shape (its name), a split
//     workflow's parts, which its root added at run time, included.
//   - end: every workflow is succeeded with every task succeeded (none
//     left pending, queued or running, none failed or cancelled; one
//     anomaly per workflow, with its tasks' states), and every edge between
//     two succeeded tasks is done.
//   - effect: every succeeded task has exactly one ledger row, any other
//     none (a row names its own workflow and task), and each row has the count workload's effect
//     of the same attempt beside it (they commit in one transaction), so
//     the job checkers' exactly-once verdict covers the tasks.
//   - stale: the row was written under the fence the task succeeded under
//     (a stale attempt's effect that stuck shows as a row under an older
//     fence).
//   - order: for every edge, every row of the dependency precedes every
//     row of the dependent.
//
// The order is the rows' ids, not the database clock. An id is drawn from
// the ledger's sequence when the row is inserted (PostgreSQL's bigserial:
// nextval is not transactional, and with its default cache of 1 hands out
// values in increasing order across sessions as the calls are made; on
// SQLite, whose writers are serialized, ids follow the order in which
// transactions commit). A dependency's row is inserted in the transaction
// that completes it, so before that transaction commits; a dependent is
// queued by the completion of its last dependency (the release rule runs
// inside the completing statement, after the other dependencies' completions
// committed: each waits on the dependent's row lock), and nothing sees it
// queued before that commit; its row is inserted by an attempt claimed
// after that. So in a correct run the dependent's row draws its id after
// every dependency's row drew its own: a larger one. Unlike the clock, the
// sequence cannot be stepped back during the run, so it cannot accuse a
// correct run; and an id is drawn at the insert, never at an earlier
// moment, so it cannot hide a dependent that wrote before a dependency's
// late row.

// wfRow is one workflow as read.
type wfRow struct {
	id    int64
	name  string
	state string
}

// wfTask is one task as read, with its succeeded attempts (count, and the
// highest fence among them).
type wfTask struct {
	id, workflow     int64
	name, state      string
	succeeded, fence int64
}

// wfEdge is one dependency edge: job runs after dep; status 1 is done.
type wfEdge struct {
	dep, job int64
	status   int
}

// wfLedgerRow is one committed row of the workflow ledger.
type wfLedgerRow struct {
	id, workflow, job int64
	task              string
	fence             int64
}

// wfInput is what the checker read.
type wfInput struct {
	confirmed []enqueuedWorkflow
	workflows []wfRow
	tasks     []wfTask
	edges     []wfEdge
	ledger    []wfLedgerRow
}

// wfAnomaly is one finding of judgeWorkflows, of one of the anomalyWorkflow
// kinds.
type wfAnomaly struct{ kind, msg string }

// wfVerdict is what judgeWorkflows found, and its counts.
type wfVerdict struct {
	workflows, succeeded int
	shapes               map[string]int
	tasks, added, edges  int
	anomalies            []wfAnomaly
}

func (v *wfVerdict) add(kind, format string, args ...any) {
	v.anomalies = append(v.anomalies, wfAnomaly{kind, fmt.Sprintf(format, args...)})
}

// judgeWorkflows checks in against the rules above.
func judgeWorkflows(in wfInput) wfVerdict {
	v := wfVerdict{shapes: map[string]int{}}
	byID := map[int64]wfRow{}
	for _, w := range in.workflows {
		byID[w.id] = w
	}
	for _, c := range in.confirmed {
		if w, ok := byID[c.id]; !ok {
			v.add(anomalyWorkflowShape, "workflow %d (%s) was enqueued but is not in the database", c.id, c.shape)
		} else if w.name != c.shape {
			v.add(anomalyWorkflowShape, "workflow %d was enqueued as %s but is named %q", c.id, c.shape, w.name)
		}
	}
	tasks := map[int64]wfTask{}
	byWorkflow := map[int64][]wfTask{}
	for _, t := range in.tasks {
		tasks[t.id] = t
		byWorkflow[t.workflow] = append(byWorkflow[t.workflow], t)
	}
	deps := map[int64][]int64{} // a task's dependencies' job ids
	succeeded := func(id int64) bool { return tasks[id].state == string(fenced.JobSucceeded) }
	for _, e := range in.edges {
		deps[e.job] = append(deps[e.job], e.dep)
		v.edges++
		// An edge into a task that has not run yet may still wait: the
		// task's workflow is reported as not succeeded, once.
		if e.status != 1 && succeeded(e.dep) && succeeded(e.job) {
			v.add(anomalyWorkflowEnd, "the edge from job %d to job %d, both succeeded, ended with status %d, not done", e.dep, e.job, e.status)
		}
	}
	rows := map[int64][]wfLedgerRow{}
	for _, r := range in.ledger {
		t, ok := tasks[r.job]
		switch {
		case !ok:
			v.add(anomalyWorkflowEffect, "ledger row %d: job %d is no task in the database", r.id, r.job)
			continue
		case t.workflow != r.workflow || t.name != r.task:
			v.add(anomalyWorkflowEffect, "ledger row %d names workflow %d task %q, but job %d is workflow %d's task %q",
				r.id, r.workflow, r.task, r.job, t.workflow, t.name)
		}
		rows[r.job] = append(rows[r.job], r)
	}
	for _, w := range in.workflows {
		v.workflows++
		v.shapes[w.name]++
		ts := byWorkflow[w.id]
		states := map[string]int{}
		for _, t := range ts {
			states[t.state]++
		}
		if w.state == string(fenced.WorkflowSucceeded) && states[string(fenced.JobSucceeded)] == len(ts) {
			v.succeeded++
		} else {
			v.add(anomalyWorkflowEnd, "workflow %d (%s) ended %s, not succeeded: its tasks %s", w.id, w.name, w.state, tally(states))
		}
		v.tasks += len(ts)
		if w.name == shapeSplit {
			v.added += max(0, len(ts)-1)
		}
		graph, ok := shapeGraph(w.name)
		if !ok {
			v.add(anomalyWorkflowShape, "workflow %d: %q is no shape of the workload", w.id, w.name)
			continue
		}
		// A split workflow has its parts once its root succeeded; until then
		// (an undrained run) it is its root alone, reported above.
		unsplit := w.name == shapeSplit && len(ts) == 1 && ts[0].name == "root" && ts[0].state != string(fenced.JobSucceeded)
		judgeShape(&v, w, ts, graph, tasks, deps, unsplit)
	}
	for _, t := range in.tasks {
		w, ok := byID[t.workflow]
		if !ok {
			v.add(anomalyWorkflowShape, "task %s (job %d) names workflow %d, which is not in the database", t.name, t.id, t.workflow)
		}
		rs := rows[t.id]
		switch {
		case len(rs) != 1 && t.state == string(fenced.JobSucceeded):
			v.add(anomalyWorkflowEffect, "workflow %d (%s): task %s (job %d) has %d effects in the ledger, not 1 (fences %s)",
				t.workflow, w.name, t.name, t.id, len(rs), fences(rs))
		case len(rs) > 0 && t.state != string(fenced.JobSucceeded):
			// its effect commits with its completion: none without it
			v.add(anomalyWorkflowEffect, "workflow %d (%s): task %s (job %d) is %s but has %d effects in the ledger (fences %s)",
				t.workflow, w.name, t.name, t.id, t.state, len(rs), fences(rs))
		case len(rs) == 1 && t.state == string(fenced.JobSucceeded) && rs[0].fence != t.fence:
			v.add(anomalyWorkflowStale, "workflow %d (%s): task %s (job %d): its effect was written under fence %d, but it succeeded under fence %d",
				t.workflow, w.name, t.name, t.id, rs[0].fence, t.fence)
		}
		for _, d := range deps[t.id] {
			judgeOrder(&v, w, t, tasks[d], rows[t.id], rows[d])
		}
	}
	return v
}

// judgeShape holds a workflow's tasks and their edges to its shape's graph;
// partial: it may lack tasks.
func judgeShape(v *wfVerdict, w wfRow, ts []wfTask, graph map[string][]string, tasks map[int64]wfTask, deps map[int64][]int64, partial bool) {
	seen := map[string]bool{}
	for _, t := range ts {
		want, ok := graph[t.name]
		if !ok {
			v.add(anomalyWorkflowShape, "workflow %d (%s) has a task %q its shape does not", w.id, w.name, t.name)
			continue
		}
		if seen[t.name] {
			v.add(anomalyWorkflowShape, "workflow %d (%s) has task %q twice", w.id, w.name, t.name)
		}
		seen[t.name] = true
		var got []string
		for _, d := range deps[t.id] {
			dt, ok := tasks[d]
			if !ok || dt.workflow != w.id {
				v.add(anomalyWorkflowShape, "workflow %d (%s): task %s depends on job %d, no task of the workflow", w.id, w.name, t.name, d)
				continue
			}
			got = append(got, dt.name)
		}
		slices.Sort(got)
		want = slices.Sorted(slices.Values(want))
		if !slices.Equal(got, want) {
			v.add(anomalyWorkflowShape, "workflow %d (%s): task %s depends on %v, its shape says %v", w.id, w.name, t.name, got, want)
		}
	}
	if len(seen) != len(graph) && !partial {
		var missing []string
		for name := range graph {
			if !seen[name] {
				missing = append(missing, name)
			}
		}
		slices.Sort(missing)
		v.add(anomalyWorkflowShape, "workflow %d (%s) lacks %d of its shape's %d tasks: %s",
			w.id, w.name, len(missing), len(graph), strings.Join(missing, " "))
	}
}

// judgeOrder: every ledger row of task t comes after every row of its
// dependency d.
func judgeOrder(v *wfVerdict, w wfRow, t, d wfTask, trs, drs []wfLedgerRow) {
	if len(trs) == 0 || len(drs) == 0 {
		return // no effect to order: the effect check reports it
	}
	first := slices.MinFunc(trs, func(a, b wfLedgerRow) int { return cmp.Compare(a.id, b.id) })
	last := slices.MaxFunc(drs, func(a, b wfLedgerRow) int { return cmp.Compare(a.id, b.id) })
	if first.id < last.id {
		v.add(anomalyWorkflowOrder, "workflow %d (%s): task %s's effect (ledger row %d, fence %d) came before its dependency %s's (row %d, fence %d)",
			w.id, w.name, t.name, first.id, first.fence, d.name, last.id, last.fence)
	}
}

// fences lists the fences of rows, for a message.
func fences(rs []wfLedgerRow) string {
	if len(rs) == 0 {
		return "none"
	}
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprint(r.fence)
	}
	return strings.Join(s, ", ")
}

// workflowTasksSQL reads every task with its succeeded attempts (count,
// highest fence), as jobsCheckSQL reads them.
const workflowTasksSQL = `
SELECT j.id, j.workflow_id, j.task_name, j.state, coalesce(s.n, 0), coalesce(s.hi, 0)
FROM fenced_jobs j
LEFT JOIN (SELECT a.job_id, count(*) AS n, max(a.fence) AS hi FROM ` + attemptsSQL + ` a
    WHERE a.outcome = 'succeeded' GROUP BY a.job_id) s
    ON s.job_id = j.id
WHERE j.workflow_id IS NOT NULL`

// workflowUnpairedSQL counts workflow ledger rows without the count
// workload's effect of the same attempt, and the reverse.
const workflowUnpairedSQL = `SELECT
    (SELECT count(*) FROM chaos_workflow_ledger w
        WHERE NOT EXISTS (SELECT 1 FROM chaos_ledger l WHERE l.job_id = w.job_id AND l.fence = w.fence))
  + (SELECT count(*) FROM chaos_ledger l
        WHERE NOT EXISTS (SELECT 1 FROM chaos_workflow_ledger w WHERE w.job_id = l.job_id AND w.fence = l.fence))`

// workflowEdgesSQL reads every edge (dependency, dependent) with its status:
// 1 when the dependency succeeded, 2 when it failed or was cancelled, else 0.
const workflowEdgesSQL = `
SELECT d.id, j.id, CASE WHEN d.state = 'succeeded' THEN 1 WHEN d.state IN ('failed', 'cancelled') THEN 2 ELSE 0 END
FROM fenced_jobs j CROSS JOIN LATERAL unnest(j.dependencies) AS dep(id) JOIN fenced_jobs d ON d.id = dep.id`

// workflowMiscountedSQL counts the tasks whose deps_waiting is not the
// number of their dependencies that have not finished (or been retried
// back): the release rule's counter, against the graph.
const workflowMiscountedSQL = `
SELECT count(*) FROM fenced_jobs j
WHERE j.dependencies IS NOT NULL AND j.deps_waiting <> (
    SELECT count(*) FROM fenced_jobs d WHERE d.id = ANY (j.dependencies)
        AND d.state NOT IN ('succeeded', 'failed', 'cancelled'))`

// checkWorkflows runs the workflow checker on the run's database;
// confirmed are the workflows whose enqueue returned.
func checkWorkflows(ctx context.Context, r *run, rep *Report, confirmed []enqueuedWorkflow) error {
	in := wfInput{confirmed: confirmed}
	for after := int64(0); ; {
		ws, err := r.c.ListWorkflows(ctx, fenced.WorkflowFilter{AfterID: after, Limit: 1000})
		if err != nil {
			return fmt.Errorf("list workflows: %w", err)
		}
		for _, w := range ws {
			in.workflows = append(in.workflows, wfRow{id: w.ID, name: w.Name, state: string(w.State)})
			after = w.ID
		}
		if len(ws) < 1000 {
			break
		}
	}
	p := r.c.db
	if err := scanAll(ctx, p, workflowTasksSQL, func(s scanner) error {
		var t wfTask
		err := s.Scan(&t.id, &t.workflow, &t.name, &t.state, &t.succeeded, &t.fence)
		in.tasks = append(in.tasks, t)
		return err
	}); err != nil {
		return fmt.Errorf("read tasks: %w", err)
	}
	// PostgreSQL keeps the edges on the rows (dependencies): an edge's
	// status is its dependency's outcome, and each task's count of
	// dependencies still waiting is checked against it below.
	if err := scanAll(ctx, p, workflowEdgesSQL, func(s scanner) error {
		var e wfEdge
		err := s.Scan(&e.dep, &e.job, &e.status)
		in.edges = append(in.edges, e)
		return err
	}); err != nil {
		return fmt.Errorf("read edges: %w", err)
	}
	if err := scanAll(ctx, p, `SELECT id, workflow_id, job_id, task, fence FROM chaos_workflow_ledger`, func(s scanner) error {
		var l wfLedgerRow
		err := s.Scan(&l.id, &l.workflow, &l.job, &l.task, &l.fence)
		in.ledger = append(in.ledger, l)
		return err
	}); err != nil {
		return fmt.Errorf("read the workflow ledger: %w", err)
	}
	var miscounted int64
	if err := p.QueryRow(ctx, workflowMiscountedSQL).Scan(&miscounted); err != nil {
		return fmt.Errorf("count the tasks' waiting dependencies: %w", err)
	}
	if miscounted > 0 {
		rep.anomaly(anomalyWorkflowEnd, "%d tasks count waiting dependencies other than those not finished", miscounted)
	}
	var unpaired int64
	if err := p.QueryRow(ctx, workflowUnpairedSQL).Scan(&unpaired); err != nil {
		return fmt.Errorf("pair the workflow ledger with effects: %w", err)
	}
	if unpaired > 0 {
		rep.anomaly(anomalyWorkflowEffect, "%d workflow ledger rows and effects are not paired under one attempt", unpaired)
	}
	v := judgeWorkflows(in)
	rep.Workflows, rep.WorkflowsSucceeded, rep.WorkflowShapes = v.workflows, v.succeeded, v.shapes
	rep.WorkflowTasks, rep.WorkflowTasksAdded, rep.WorkflowEdges = v.tasks, v.added, v.edges
	for _, a := range v.anomalies {
		rep.anomaly(a.kind, "%s", a.msg)
	}
	return nil
}

// scanner scans one row.
type scanner interface{ Scan(dest ...any) error }

// scanAll runs q on p and hands each row to f.
func scanAll(ctx context.Context, p querier, q string, f func(scanner) error) error {
	rows, err := p.Query(ctx, q)
	if err != nil {
		return err
	}
	for rows.Next() {
		if err := f(rows); err != nil {
			rows.Close()
			return err
		}
	}
	rows.Close()
	return rows.Err()
}

// workflowShapeCounts prints the shapes' counts in workflowShapes' order,
// then any other name.
func workflowShapeCounts(m map[string]int) string {
	var parts []string
	for _, s := range workflowShapes {
		parts = append(parts, fmt.Sprintf("%s %d", s, m[s]))
	}
	for _, s := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(workflowShapes, s) {
			parts = append(parts, fmt.Sprintf("%s %d", s, m[s]))
		}
	}
	return strings.Join(parts, ", ")
}
