package mysqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// A workflow's administration locks the workflow row first, then its
// tasks in id order, then (the release rule) their edges and dependents:
// retention takes them in the same order.

// lockWorkflowSQL locks a workflow row. Parameter: its id.
const lockWorkflowSQL = `SELECT id FROM fenced_workflows WHERE id = ? FOR UPDATE`

// workflowTaskIDsSQL locks a workflow's tasks in a set of states, in id
// order. Parameter: the workflow id; %s is the condition on the states.
const workflowTaskIDsSQL = `SELECT id FROM fenced_jobs FORCE INDEX (fenced_jobs_task)
WHERE workflow_id = ? AND %s ORDER BY id FOR UPDATE`

// lockWorkflow locks workflow id in tx, or returns ErrNotFound.
func lockWorkflow(ctx context.Context, tx *sql.Tx, id int64) error {
	_, err := sqldb.One(ctx, tx, sqldb.Value[int64], lockWorkflowSQL, id)
	return err
}

// CancelWorkflow implements driver.WorkflowDriver, in one transaction: the
// workflow's cancelled_at (the first cancel's), its pending and queued
// tasks cancelled, as CancelJob cancels them (their dependents resolved by
// the release rule), its running ones asked to stop.
func (d *Driver) CancelWorkflow(ctx context.Context, id int64) (*fencedtype.Workflow, error) {
	return d.workflowAdmin(ctx, "cancel", id, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE fenced_workflows SET cancelled_at = COALESCE(cancelled_at, `+now+`) WHERE id = ?`, id); err != nil {
			return err
		}
		ids, err := collectIDs(tx.QueryContext(ctx, fmt.Sprintf(workflowTaskIDsSQL, "state IN ('pending', 'queued')"), id))
		if err != nil {
			return err
		}
		if len(ids) > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE fenced_jobs FORCE INDEX (PRIMARY) SET finished_at = `+now+`,
    updated_at = `+now+`, state = 'cancelled' WHERE id IN (`+idList(ids)+`)`); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE fenced_jobs FORCE INDEX (fenced_jobs_task) SET cancel_requested = TRUE,
    updated_at = `+now+` WHERE workflow_id = ? AND state = 'running'`, id); err != nil {
			return err
		}
		return workflowStep(ctx, tx, resolved{failed: ids})
	})
}

// retryTasksSQL puts tasks back as RetryJob does: pending while an edge
// waits or a failed one stops it, else queued; the release rule then
// takes their failed edges back. state is assigned first, from columns
// none assigns. %s are the ids.
const retryTasksSQL = `UPDATE fenced_jobs FORCE INDEX (PRIMARY) SET
    state = IF(deps_waiting > 0 OR (deps_failed > 0 AND NOT run_anyway), 'pending', 'queued'),
    run_at = ` + now + `, finished_at = NULL, cancel_requested = FALSE,
    max_attempts = attempt + max_attempts,
    updated_at = ` + now + `
WHERE id IN (%s)`

// RetryWorkflow implements driver.WorkflowDriver, in one transaction: the
// workflow's cancel cleared, every failed task and every cancelled one its
// workflow did not cancel retried, and the release rule run for them all.
func (d *Driver) RetryWorkflow(ctx context.Context, id int64) (*fencedtype.Workflow, error) {
	return d.workflowAdmin(ctx, "retry", id, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE fenced_workflows SET cancelled_at = NULL WHERE id = ?`, id); err != nil {
			return err
		}
		ids, err := collectIDs(tx.QueryContext(ctx, fmt.Sprintf(workflowTaskIDsSQL,
			"(state = 'failed' OR (state = 'cancelled' AND NOT workflow_cancelled))"), id))
		if err != nil || len(ids) == 0 {
			return err
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(retryTasksSQL, idList(ids))); err != nil {
			return err
		}
		return workflowStep(ctx, tx, resolved{again: ids})
	})
}

// workflowAdmin runs fn on workflow id, locked, in one transaction, and
// reads the workflow back in it.
func (d *Driver) workflowAdmin(ctx context.Context, op string, id int64, fn func(*sql.Tx) error) (*fencedtype.Workflow, error) {
	var w *fencedtype.Workflow
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		if err := lockWorkflow(ctx, tx, id); err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			return err
		}
		var err error
		w, err = getWorkflow(ctx, tx, id)
		return err
	})
	if errors.Is(err, fencedtype.ErrNotFound) {
		return nil, fencedtype.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("%s workflow %d: %w", op, id, err)
	}
	return w, nil
}

// DeleteWorkflow implements driver.WorkflowDriver, in one transaction.
func (d *Driver) DeleteWorkflow(ctx context.Context, id int64) error {
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		if err := lockWorkflow(ctx, tx, id); err != nil {
			return err
		}
		_, err := deleteWorkflow(ctx, tx, id)
		return err
	})
	if errors.Is(err, fencedtype.ErrNotFound) {
		return fencedtype.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("delete workflow %d: %w", id, err)
	}
	return nil
}

// deleteWorkflow deletes workflow id, locked by tx, whole: its tasks'
// edges, the tasks (their attempts go with them, ON DELETE CASCADE), the
// row. It returns the number of tasks.
func deleteWorkflow(ctx context.Context, tx *sql.Tx, id int64) (int, error) {
	ids, err := collectIDs(tx.QueryContext(ctx, fmt.Sprintf(workflowTaskIDsSQL, "TRUE"), id))
	if err != nil {
		return 0, err
	}
	for rest := ids; len(rest) > 0; {
		chunk := rest[:min(len(rest), 5000)]
		rest = rest[len(chunk):]
		list := idList(chunk)
		if _, err := tx.ExecContext(ctx, `DELETE FROM fenced_job_deps WHERE job_id IN (`+list+`)`); err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM fenced_jobs WHERE id IN (`+list+`)`); err != nil {
			return 0, err
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM fenced_workflows WHERE id = ?`, id); err != nil {
		return 0, err
	}
	return len(ids), nil
}

// oldWorkflowsSQL finds workflows whose every task finished before the
// age: read from the tasks finished before it, through the retention
// index, each probed for a task that did not (unfinished, or finished
// since) through the (workflow_id, task_name) key. Candidates, each checked
// again after its lock. Parameters: age_us, age_us, limit.
const oldWorkflowsSQL = `SELECT DISTINCT j.workflow_id FROM fenced_jobs j
WHERE j.finished_at < ` + now + ` - INTERVAL ? MICROSECOND AND j.workflow_id IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM fenced_jobs y FORCE INDEX (fenced_jobs_task) WHERE y.workflow_id = j.workflow_id
        AND (y.finished_at IS NULL OR y.finished_at >= ` + now + ` - INTERVAL ? MICROSECOND))
LIMIT ?`

// lockOldWorkflowSQL locks a candidate workflow row unless another
// transaction holds it (its cancel or retry). Parameter: its id.
const lockOldWorkflowSQL = `SELECT id FROM fenced_workflows WHERE id = ? FOR UPDATE SKIP LOCKED`

// workflowYoungSQL locks a workflow's tasks and counts them, and those not
// finished before the age. Parameters: the id, age_us.
const workflowYoungSQL = `SELECT COUNT(*), COALESCE(SUM(state NOT IN ('succeeded', 'failed', 'cancelled')
    OR finished_at IS NULL OR finished_at >= ` + now + ` - INTERVAL ? MICROSECOND), 0)
FROM fenced_jobs FORCE INDEX (fenced_jobs_task) WHERE workflow_id = ? FOR UPDATE`

// deleteOldWorkflows deletes, in tx, whole workflows whose every task
// finished before age, while their tasks fit in room (a first one whatever
// its size, so that none is too large ever to go), and returns the tasks
// deleted.
func deleteOldWorkflows(ctx context.Context, tx *sql.Tx, age time.Duration, room int) (int, error) {
	cands, err := collectIDs(tx.QueryContext(ctx, oldWorkflowsSQL, age.Microseconds(), age.Microseconds(), room))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range cands {
		if _, err := sqldb.One(ctx, tx, sqldb.Value[int64], lockOldWorkflowSQL, id); errors.Is(err, fencedtype.ErrNotFound) {
			continue
		} else if err != nil {
			return 0, err
		}
		var total, young int
		if err := tx.QueryRowContext(ctx, workflowYoungSQL, age.Microseconds(), id).Scan(&total, &young); err != nil {
			return 0, err
		}
		if young > 0 || (n > 0 && n+total > room) {
			continue
		}
		k, err := deleteWorkflow(ctx, tx, id)
		if err != nil {
			return 0, err
		}
		if n += k; n >= room {
			break
		}
	}
	return n, nil
}
