package sqlitedriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// cancelTasksSQL cancels workflow ?1's pending and queued tasks and asks
// its running ones to stop, as cancelJobSQL does one job, and returns the
// ones it cancelled.
const cancelTasksSQL = cancelJobSet + `
WHERE workflow_id = ?1 AND state IN ('pending', 'queued', 'running')
RETURNING id, state = 'cancelled'`

// CancelWorkflow implements driver.WorkflowDriver, in one write
// transaction: the workflow recorded cancelled (at its first cancel), its
// tasks cancelled (cancelTasksSQL), the release rule for those, and the
// workflow read back.
func (d *Driver) CancelWorkflow(ctx context.Context, id int64) (*fencedtype.Workflow, error) {
	var out *fencedtype.Workflow
	err := d.writeTx(ctx, func(tx *sql.Tx) error {
		n, err := sqldb.Exec(ctx, tx, `UPDATE fenced_workflows SET cancelled_us = COALESCE(cancelled_us, `+nowUS+`) WHERE id = ?1`, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return fencedtype.ErrNotFound
		}
		cancelled, err := flagged(ctx, tx, cancelTasksSQL, id)
		if err != nil {
			return err
		}
		if err := workflowStep(ctx, tx, cancelled, nil); err != nil {
			return err
		}
		out, err = readWorkflow(ctx, tx, id)
		return err
	})
	if err != nil {
		if errors.Is(err, fencedtype.ErrNotFound) {
			return nil, fencedtype.ErrNotFound
		}
		return nil, fmt.Errorf("cancel workflow %d: %w", id, err)
	}
	return out, nil
}

// retryTasksSQL retries workflow ?1's failed tasks and the cancelled ones
// its workflow did not cancel (taskRunnable), as retryJobSQL does one job,
// and returns them.
const retryTasksSQL = `
UPDATE fenced_jobs SET ` + retryJobSet + `
WHERE workflow_id = ?1 AND state IN ('failed', 'cancelled') AND ` + taskRunnable + `
RETURNING id, 1`

// RetryWorkflow implements driver.WorkflowDriver, in one write
// transaction: the workflow's cancel cleared, its tasks retried
// (retryTasksSQL) and the release rule for them (workflowRetried), until a
// round retries nothing: a task an operator cancelled whose dependency had
// failed becomes runnable once that dependency is retried.
func (d *Driver) RetryWorkflow(ctx context.Context, id int64) (*fencedtype.Workflow, error) {
	var out *fencedtype.Workflow
	err := d.writeTx(ctx, func(tx *sql.Tx) error {
		n, err := sqldb.Exec(ctx, tx, `UPDATE fenced_workflows SET cancelled_us = NULL WHERE id = ?1`, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return fencedtype.ErrNotFound
		}
		for {
			retried, err := flagged(ctx, tx, retryTasksSQL, id)
			if err != nil {
				return err
			}
			if len(retried) == 0 {
				break
			}
			if err := workflowRetried(ctx, tx, retried); err != nil {
				return err
			}
		}
		out, err = readWorkflow(ctx, tx, id)
		return err
	})
	if err != nil {
		if errors.Is(err, fencedtype.ErrNotFound) {
			return nil, fencedtype.ErrNotFound
		}
		return nil, fmt.Errorf("retry workflow %d: %w", id, err)
	}
	return out, nil
}

// flagged runs a statement returning (id, flag) rows and returns the ids
// flagged, sorted.
func flagged(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]int64, error) {
	type row struct {
		id   int64
		flag bool
	}
	rows, err := sqldb.All(ctx, tx, func(r sqldb.Scanner) (row, error) {
		var x row
		return x, r.Scan(&x.id, &x.flag)
	}, query, args...)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, r := range rows {
		if r.flag {
			ids = append(ids, r.id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// DeleteWorkflow implements driver.WorkflowDriver, in one write
// transaction (deleteWorkflows).
func (d *Driver) DeleteWorkflow(ctx context.Context, id int64) error {
	err := d.writeTx(ctx, func(tx *sql.Tx) error {
		var found int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM fenced_workflows WHERE id = ?1`, id).Scan(&found)
		if errors.Is(err, sql.ErrNoRows) {
			return fencedtype.ErrNotFound
		}
		if err != nil {
			return err
		}
		_, err = deleteWorkflows(ctx, tx, []int64{id})
		return err
	})
	if err != nil {
		if errors.Is(err, fencedtype.ErrNotFound) {
			return fencedtype.ErrNotFound
		}
		return fmt.Errorf("delete workflow %d: %w", id, err)
	}
	return nil
}

// The statements of deleteWorkflows; ?1 is a JSON array of workflow ids.
// Every edge joins two tasks of one workflow, so a workflow's edges are
// those whose dependent is one of its tasks (found by fenced_job_deps_job).
const (
	deleteWorkflowEdgesSQL = `DELETE FROM fenced_job_deps WHERE job_id IN (
    SELECT id FROM fenced_jobs WHERE workflow_id IN (SELECT value FROM json_each(?1)))`
	deleteWorkflowTasksSQL = `DELETE FROM fenced_jobs WHERE workflow_id IN (SELECT value FROM json_each(?1))`
	deleteWorkflowRowsSQL  = `DELETE FROM fenced_workflows WHERE id IN (SELECT value FROM json_each(?1))`
)

// deleteWorkflows deletes the workflows ids whole inside tx: their edges,
// their tasks (each one's attempt history with it, ON DELETE CASCADE) and
// their rows. It returns how many tasks it deleted.
func deleteWorkflows(ctx context.Context, tx *sql.Tx, ids []int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	arg, err := json.Marshal(ids)
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, deleteWorkflowEdgesSQL, string(arg)); err != nil {
		return 0, err
	}
	n, err := sqldb.Exec(ctx, tx, deleteWorkflowTasksSQL, string(arg))
	if err != nil {
		return 0, err
	}
	_, err = tx.ExecContext(ctx, deleteWorkflowRowsSQL, string(arg))
	return n, err
}
