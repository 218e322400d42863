package mysqldriver

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/fenced/fenced/driver"
)

// The release rule of workflows (docs/design.md §6.18), applied in Go
// inside the transaction of the transition it follows: MariaDB cannot
// update fenced_jobs from a trigger on fenced_jobs.

// resolved are tasks whose state a transaction just changed, by what the
// change means to their dependents: they succeeded (done), failed for good
// or were cancelled (failed), or were taken out of failed or cancelled by
// a retry (again). Only rows the transition changed may be in it: a stale
// end wrote nothing and releases nothing.
type resolved struct {
	done, failed, again []int64
}

func (r resolved) empty() bool { return len(r.done)+len(r.failed)+len(r.again) == 0 }

// Edge statuses in fenced_job_deps.
const (
	edgeWaiting = 0
	edgeDone    = 1
	edgeFailed  = 2
)

// stepEdgesSQL locks the out-edges of the tasks resolved, in primary-key
// order (a resolution reads its own edges by the dep_id prefix: its cost is
// its out-degree). A locking read: in the caller's REPEATABLE READ
// transaction a plain read shows its snapshot, which may lack an edge
// added since. %s are the ids.
const stepEdgesSQL = `SELECT dep_id, job_id, status FROM fenced_job_deps FORCE INDEX (PRIMARY)
WHERE dep_id IN (%s) ORDER BY dep_id, job_id FOR UPDATE`

// stepEdgesUpdateSQL resolves the edges of the tasks resolved: a done
// task's waiting edges are done, a failed one's failed, and a retried
// one's failed edges wait again. %[1]s are the done ids, %[2]s the failed
// ones, %[3]s the retried ones (each list holds at least the id 0, which is
// no job's), %[4]s all of them.
const stepEdgesUpdateSQL = `UPDATE fenced_job_deps FORCE INDEX (PRIMARY) SET
    status = CASE WHEN dep_id IN (%[1]s) THEN 1 WHEN dep_id IN (%[2]s) THEN 2 ELSE 0 END
WHERE dep_id IN (%[4]s) AND status = CASE WHEN dep_id IN (%[3]s) THEN 2 ELSE 0 END`

// stepDependentsSQL changes the counters of dependents that had the same
// edges resolved (done, failed and waiting again: the three deltas), one
// conditional UPDATE per dependent row: InnoDB's UPDATE reads the latest
// committed row under its lock, so two dependencies finishing at once in
// two transactions queue for the row, and the second sees the first's
// counts: a fan-in task is released by exactly one of them. state is
// assigned first, from the counts as they were and the deltas; the
// counters after it read only themselves, so the result is the same
// whether the server assigns left to right or simultaneously.
//
//   - pending, a failed edge and not running anyway: cancelled (its
//     other columns are set by stepCancelledSQL, from the rows this left);
//   - pending with no edge waiting (and none failed, or running anyway):
//     queued;
//   - queued with an edge waiting again (a task running anyway whose
//     failed dependency was retried): pending;
//   - cancelled by its workflow with no failed edge left: pending, or
//     queued when no edge waits (stepCancelledSQL clears the rest).
//
// %[1]d, %[2]d and %[3]d are the deltas of done, failed and again edges
// (w' = w - done - failed + again, f' = f + failed - again), %[4]s the
// ids: integers the driver writes, no input.
const stepDependentsSQL = `UPDATE fenced_jobs FORCE INDEX (PRIMARY) SET
    state = CASE
        WHEN state = 'pending' AND deps_failed + %[2]d - %[3]d > 0 AND NOT run_anyway THEN 'cancelled'
        WHEN state = 'pending' AND deps_waiting - %[1]d - %[2]d + %[3]d = 0 THEN 'queued'
        WHEN state = 'queued' AND deps_waiting - %[1]d - %[2]d + %[3]d > 0 THEN 'pending'
        WHEN state = 'cancelled' AND workflow_cancelled AND deps_failed + %[2]d - %[3]d = 0 THEN
            IF(deps_waiting - %[1]d - %[2]d + %[3]d > 0, 'pending', 'queued')
        ELSE state END,
    deps_waiting = deps_waiting - %[1]d - %[2]d + %[3]d,
    deps_failed = deps_failed + %[2]d - %[3]d,
    updated_at = ` + now + `
WHERE id IN (%[4]s)`

// stepLockSQL locks dependents in id order before several statements
// change them, so that two resolutions lock shared dependents in the same
// order. %s are the ids.
const stepLockSQL = `SELECT id FROM fenced_jobs FORCE INDEX (PRIMARY) WHERE id IN (%s) ORDER BY id FOR UPDATE`

// stepTransitionsSQL finds, among dependents stepDependentsSQL changed
// (and locked), those it cancelled (cancelled, finished_at still NULL: a
// pending task has none) and those it took out of their workflow's cancel
// (pending or queued, finished_at still set). %s are the ids.
const stepTransitionsSQL = `SELECT id, state = 'cancelled' FROM fenced_jobs FORCE INDEX (PRIMARY)
WHERE id IN (%s) AND ((state = 'cancelled' AND finished_at IS NULL)
    OR (state IN ('pending', 'queued') AND finished_at IS NOT NULL))
LOCK IN SHARE MODE`

// stepCancelledSQL completes the transitions stepTransitionsSQL found: a
// task its workflow cancelled records it, its error and its finish; one
// taken out of that cancel clears them. Every assignment reads state alone,
// which none assigns. Parameter: the cancel's error; %s are the ids.
const stepCancelledSQL = `UPDATE fenced_jobs FORCE INDEX (PRIMARY) SET
    workflow_cancelled = (state = 'cancelled'),
    last_error = IF(state = 'cancelled', ?, NULL),
    finished_at = IF(state = 'cancelled', ` + now + `, NULL),
    updated_at = ` + now + `
WHERE id IN (%s)`

// workflowStep applies the release rule for the tasks r resolved, inside
// tx, and again for every dependent it cancels or takes out of a cancel,
// through the graph: iterative over a frontier, set-based per step (the
// frontier's edges in two statements, then each dependent's row once).
func workflowStep(ctx context.Context, tx *sql.Tx, r resolved) error {
	for !r.empty() {
		next, err := stepOnce(ctx, tx, r)
		if err != nil {
			return fmt.Errorf("workflow step: %w", err)
		}
		r = next
	}
	return nil
}

// deltas are the edges of one dependent a step resolves.
type deltas struct{ done, failed, again int }

// stepOnce resolves the frontier r's edges and dependents and returns the
// next frontier: the dependents it cancelled, and those it took out of a
// cancel.
func stepOnce(ctx context.Context, tx *sql.Tx, r resolved) (resolved, error) {
	all := slices.Concat(r.done, r.failed, r.again)
	kind := make(map[int64]int, len(all))
	for _, id := range r.done {
		kind[id] = edgeDone
	}
	for _, id := range r.failed {
		kind[id] = edgeFailed
	}
	for _, id := range r.again {
		kind[id] = edgeWaiting
	}
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(stepEdgesSQL, idList(all)))
	if err != nil {
		return resolved{}, err
	}
	per := map[int64]*deltas{}
	changed := 0
	for rows.Next() {
		var dep, job int64
		var status int
		if err := rows.Scan(&dep, &job, &status); err != nil {
			rows.Close()
			return resolved{}, err
		}
		to := kind[dep]
		from := edgeWaiting
		if to == edgeWaiting {
			from = edgeFailed
		}
		if status != from {
			continue
		}
		d := per[job]
		if d == nil {
			d = &deltas{}
			per[job] = d
		}
		switch to {
		case edgeDone:
			d.done++
		case edgeFailed:
			d.failed++
		default:
			d.again++
		}
		changed++
	}
	if err := rows.Close(); err != nil {
		return resolved{}, err
	}
	if err := rows.Err(); err != nil {
		return resolved{}, err
	}
	if changed == 0 {
		return resolved{}, nil
	}
	list := func(ids []int64) string {
		if len(ids) == 0 {
			return "0"
		}
		return idList(ids)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(stepEdgesUpdateSQL, list(r.done), list(r.failed), list(r.again), idList(all))); err != nil {
		return resolved{}, err
	}
	// One UPDATE for each distinct triple of deltas (usually one: each
	// dependent had one edge resolved), each row in exactly one.
	groups := map[deltas][]int64{}
	var dependents, touched []int64
	for job, d := range per {
		groups[*d] = append(groups[*d], job)
		dependents = append(dependents, job)
		if d.failed > 0 || d.again > 0 {
			touched = append(touched, job)
		}
	}
	slices.Sort(dependents)
	if len(groups) > 1 {
		if _, err := collectIDs(tx.QueryContext(ctx, fmt.Sprintf(stepLockSQL, idList(dependents)))); err != nil {
			return resolved{}, err
		}
	}
	keys := make([]deltas, 0, len(groups))
	for d := range groups {
		keys = append(keys, d)
	}
	slices.SortFunc(keys, func(a, b deltas) int { return cmp.Compare(slices.Min(groups[a]), slices.Min(groups[b])) })
	for _, d := range keys {
		ids := groups[d]
		slices.Sort(ids)
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(stepDependentsSQL, d.done, d.failed, d.again, idList(ids))); err != nil {
			return resolved{}, err
		}
	}
	// Only a failed or retried edge can cancel a dependent or take it out
	// of a cancel; a step of completions alone ends here.
	if len(touched) == 0 {
		return resolved{}, nil
	}
	slices.Sort(touched)
	var next resolved
	trows, err := tx.QueryContext(ctx, fmt.Sprintf(stepTransitionsSQL, idList(touched)))
	if err != nil {
		return resolved{}, err
	}
	var moved []int64
	for trows.Next() {
		var id int64
		var cancelled bool
		if err := trows.Scan(&id, &cancelled); err != nil {
			trows.Close()
			return resolved{}, err
		}
		if cancelled {
			next.failed = append(next.failed, id)
		} else {
			next.again = append(next.again, id)
		}
		moved = append(moved, id)
	}
	if err := trows.Close(); err != nil {
		return resolved{}, err
	}
	if err := trows.Err(); err != nil {
		return resolved{}, err
	}
	if len(moved) > 0 {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(stepCancelledSQL, idList(moved)), driver.TaskCancelError); err != nil {
			return resolved{}, err
		}
	}
	return next, nil
}

// idList writes ids as SQL integer literals, for the step's statements,
// whose lists can hold a whole graph's frontier: integers from the
// database, never input, so nothing needs quoting, and no placeholder
// limit applies.
func idList(ids []int64) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d", id)
	}
	return b.String()
}
