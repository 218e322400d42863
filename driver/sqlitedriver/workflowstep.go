package sqlitedriver

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/sqldb"
)

// The release rule of workflows (docs/design.md §6.18), applied in the
// transaction of every transition that finishes a task or takes it out of a
// finished state: a worker's end (EndJobs), recovery, an operator's cancel
// and retry, a workflow's cancel and retry, and an addition of tasks that
// depend on finished ones. SQLite has one writer, and the transaction holds
// the write lock from its first statement, so nothing changes between one
// step's statements and the next.
//
// Each step works on a frontier of dependencies: one statement changes the
// frontier's edges still in the state it resolves (by the primary key's
// dep_id prefix) and returns their dependents, and one statement changes
// each dependent's counters once, by the number of its edges the step
// changed (deps_waiting = deps_waiting - n). A step's cost is the
// frontier's out-degree, never the workflow's size. A cancel or a retry
// that runs on through the graph does so by frontiers, in a loop: a chain
// of any length needs no stack.
//
// Only edges still waiting (or, for a retry, failed) are resolved, so a
// step run for a dependency whose older edges were resolved already (a
// task added to a workflow later) resolves just the new ones, and a task
// that reaches a frontier again (one its workflow cancelled, reached by a
// later failure of another dependency) changes nothing the second time.

// stepEdgesSQL sets the edges of the frontier ?1 (a JSON array of job ids)
// whose status is ?2 to status ?3 and returns each edge's dependent.
const stepEdgesSQL = `UPDATE fenced_job_deps SET status = ?3
WHERE dep_id IN (SELECT value FROM json_each(?1)) AND status = ?2
RETURNING job_id`

// counted is the FROM of a step's update of its dependents: ?1 is a JSON
// array of [job id, edges changed].
const counted = `FROM (SELECT value ->> 0 AS dep_job, value ->> 1 AS n FROM json_each(?1)) AS c
WHERE fenced_jobs.id = c.dep_job`

// stepDoneSQL: dependencies succeeded. A pending dependent left with no edge
// waiting and none failed (or that runs anyway) is queued; it keeps its
// run_at, so it runs at the later of the two.
const stepDoneSQL = `UPDATE fenced_jobs SET
    deps_waiting = deps_waiting - c.n,
    state = CASE WHEN state = 'pending' AND deps_waiting = c.n AND (deps_failed = 0 OR run_anyway)
        THEN 'queued' ELSE state END,
    updated_us = ` + nowUS + `
` + counted + `
RETURNING id, 0`

// stepFailedSQL: dependencies failed for good or were cancelled. A pending
// dependent that does not run anyway is cancelled by its workflow; one that
// runs anyway is queued once no edge waits (?2 is the error a cancelled
// one records, driver.TaskCancelError). It returns the dependents its
// workflow cancelled (now, or before: their own edges failed then, so a
// next step finds none of them waiting).
const stepFailedSQL = `UPDATE fenced_jobs SET
    deps_waiting = deps_waiting - c.n,
    deps_failed = deps_failed + c.n,
    state = CASE
        WHEN state = 'pending' AND NOT run_anyway THEN 'cancelled'
        WHEN state = 'pending' AND deps_waiting = c.n THEN 'queued'
        ELSE state END,
    workflow_cancelled = workflow_cancelled OR (state = 'pending' AND NOT run_anyway),
    finished_us = CASE WHEN state = 'pending' AND NOT run_anyway THEN ` + nowUS + ` ELSE finished_us END,
    last_error = CASE WHEN state = 'pending' AND NOT run_anyway THEN ?2 ELSE last_error END,
    updated_us = ` + nowUS + `
` + counted + `
RETURNING id, state = 'cancelled' AND workflow_cancelled`

// stepRetriedSQL: failed or cancelled dependencies were retried, and their
// failed edges wait again. A dependent its workflow cancelled that has no
// failed edge left is pending again, and a queued one (running anyway)
// waits for the retried dependency: both are returned, the next frontier
// (a pending task has no failed edge of its own, so one that was pending
// already adds nothing to the next step).
const stepRetriedSQL = `UPDATE fenced_jobs SET
    deps_waiting = deps_waiting + c.n,
    deps_failed = deps_failed - c.n,
    state = CASE
        WHEN workflow_cancelled AND deps_failed = c.n THEN 'pending'
        WHEN state = 'queued' THEN 'pending'
        ELSE state END,
    finished_us = CASE WHEN workflow_cancelled AND deps_failed = c.n THEN NULL ELSE finished_us END,
    last_error = CASE WHEN workflow_cancelled AND deps_failed = c.n THEN NULL ELSE last_error END,
    workflow_cancelled = workflow_cancelled AND deps_failed <> c.n,
    updated_us = ` + nowUS + `
` + counted + `
RETURNING id, state = 'pending'`

// Edge statuses (fenced_job_deps.status).
const (
	edgeWaiting = 0
	edgeDone    = 1
	edgeFailed  = 2
)

// workflowStep applies the release rule inside tx for tasks that just
// finished: failed (failed for good, or cancelled) and succeeded, each a
// list of job ids of tasks whose transition tx wrote (a job that is no task
// has no edges, and costs a lookup). The order does not matter: a
// dependent of both a failed and a succeeded task still has the failed
// one's edge waiting while the success is counted, so the success alone
// never queues it.
func workflowStep(ctx context.Context, tx *sql.Tx, failed, succeeded []int64) error {
	if len(failed) > 0 {
		if err := stepFailed(ctx, tx, failed); err != nil {
			return err
		}
	}
	if len(succeeded) > 0 {
		if _, err := step(ctx, tx, succeeded, edgeWaiting, edgeDone, stepDoneSQL); err != nil {
			return fmt.Errorf("release the dependents of %d tasks: %w", len(succeeded), err)
		}
	}
	return nil
}

// stepFailed fails the waiting edges of frontier and runs on through the
// dependents its workflow cancelled, until none is.
func stepFailed(ctx context.Context, tx *sql.Tx, frontier []int64) error {
	for len(frontier) > 0 {
		next, err := step(ctx, tx, frontier, edgeWaiting, edgeFailed, stepFailedSQL, driver.TaskCancelError)
		if err != nil {
			return fmt.Errorf("cancel the dependents of %d tasks: %w", len(frontier), err)
		}
		frontier = next
	}
	return nil
}

// workflowRetried applies the release rule inside tx for tasks tx just
// retried (failed or cancelled, now queued or pending): their failed edges
// wait again, and so on through the dependents that go back to pending.
func workflowRetried(ctx context.Context, tx *sql.Tx, retried []int64) error {
	for frontier := retried; len(frontier) > 0; {
		next, err := step(ctx, tx, frontier, edgeFailed, edgeWaiting, stepRetriedSQL)
		if err != nil {
			return fmt.Errorf("resume the dependents of %d tasks: %w", len(frontier), err)
		}
		frontier = next
	}
	return nil
}

// step is one step of the rule: the edges of frontier from status from to
// status to, then the update of their dependents' counters (dependents,
// with counted as its FROM; ?1 and then args) by the number of each one's
// edges that changed. It returns the next frontier: the dependents whose
// row the update returned with its second column true, sorted.
func step(ctx context.Context, tx *sql.Tx, frontier []int64, from, to int, dependents string, args ...any) ([]int64, error) {
	ids, err := json.Marshal(frontier)
	if err != nil {
		return nil, err
	}
	changed, err := sqldb.All(ctx, tx, sqldb.Value[int64], stepEdgesSQL, string(ids), from, to)
	if err != nil || len(changed) == 0 {
		return nil, err
	}
	counts := map[int64]int{}
	for _, id := range changed {
		counts[id]++
	}
	pairs := make([][2]int64, 0, len(counts))
	for id, n := range counts {
		pairs = append(pairs, [2]int64{id, int64(n)})
	}
	slices.SortFunc(pairs, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	arg, err := json.Marshal(pairs)
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, dependents, append([]any{string(arg)}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var next []int64
	for rows.Next() {
		var id int64
		var more bool
		if err := rows.Scan(&id, &more); err != nil {
			return nil, err
		}
		if more {
			next = append(next, id)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.Sort(next)
	return next, nil
}
