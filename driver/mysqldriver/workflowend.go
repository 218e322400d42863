package mysqldriver

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

// clockUS is the database clock in microseconds since the epoch.
const clockUS = `TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ` + now + `)`

// taskFlagAsInsertID is clockAsInsertID for the UPDATEs that end attempts,
// which also say whether a row they ended is a workflow's task, so that an
// end of jobs without a workflow costs no statement more: the value handed
// back is the clock reading times two plus a flag, set by a row with a
// workflow_id and kept by every row after it in the statement (the
// LAST_INSERT_ID() a row reads is the value the row before it set, and the
// clock is the statement's, so only a row of the same statement can have
// set clock*2+1; a value left by an earlier statement in the same
// microsecond can only raise the flag, and a raised flag costs one read
// that finds no task). Every row the statement matches evaluates it: it is
// a conjunct of the WHERE. %s qualifies the column ("j." or "").
const taskFlagAsInsertID = `LAST_INSERT_ID(` + clockUS + ` * 2 + (%sworkflow_id IS NOT NULL OR LAST_INSERT_ID() = ` +
	clockUS + ` * 2 + 1)) > 0`

// execAtTask runs an UPDATE ending with taskFlagAsInsertID and returns the
// rows it matched and, when it matched any, its clock reading and whether
// one of them may be a task.
func execAtTask(ctx context.Context, tx *sql.Tx, query string, args ...any) (int64, time.Time, bool, error) {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, time.Time{}, false, err
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return n, time.Time{}, false, err
	}
	v, err := res.LastInsertId()
	if err != nil {
		return 0, time.Time{}, false, err
	}
	return n, time.UnixMicro(v >> 1).UTC(), v&1 == 1, nil
}

// endedTasksSQL reads the states of the tasks among rows a transition just
// changed (and locked). %s are the ids.
const endedTasksSQL = `SELECT id, state FROM fenced_jobs FORCE INDEX (PRIMARY)
WHERE id IN (%s) AND workflow_id IS NOT NULL LOCK IN SHARE MODE`

// releaseEnded applies the release rule for the tasks among ids, rows tx
// just changed: those it left succeeded are done, failed or cancelled
// failed; the others (back to queued) resolve nothing.
func releaseEnded(ctx context.Context, tx *sql.Tx, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(endedTasksSQL, idList(ids)))
	if err != nil {
		return err
	}
	var r resolved
	for rows.Next() {
		var id int64
		var state string
		if err := rows.Scan(&id, &state); err != nil {
			rows.Close()
			return err
		}
		switch fencedtype.JobState(state) {
		case fencedtype.JobSucceeded:
			r.done = append(r.done, id)
		case fencedtype.JobFailed, fencedtype.JobCancelled:
			r.failed = append(r.failed, id)
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return workflowStep(ctx, tx, r)
}
