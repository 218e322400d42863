package sqlitedriver

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// jobGuardByID is jobGuard for a statement that finds its jobs by id
// through a join: its columns, written +col, serve no index, so the planner
// looks each job up by its id instead of walking the running jobs.
const jobGuardByID = `+state = 'running' AND +lease_expires_us > ` + nowUS

// endJobsSQL ends a batch of attempts in one statement, each guarded by its
// own fence. ?1 is a JSON array with one element per end (endArgs):
// [id, fence, kind, output, error, delay_us, discard, backoff base_us,
// max_us, jitter], output and error the hex of their bytes (so they are
// stored byte for byte), output null for none, and the three of the backoff
// null for none. No two elements may name the same job (endJobs splits the
// batch).
//
// A failure retries (queued, run_at = now + delay) unless attempts are
// exhausted or it is discarded; a snooze does not count against
// max_attempts. A job asked to cancel that fails or snoozes ends cancelled.
// A completion clears the job's last error (the history keeps each
// attempt's). A failure given a backoff waits the backoff of its attempt
// (backoffUS) instead of delay_us. The clock is read once per statement
// (SQLite's 'now' holds for a whole statement), so every end is recorded at
// the reading its guard used, which it returns. It returns one row per job
// it ended: a job whose fence or lease no longer holds is left alone. Each
// row says whether the job is a workflow's task, whose finish the release
// rule follows (workflowStep) in the same transaction.
//
// Each job is looked up by its id (jobGuardByID), the one plan that costs a
// lookup per end. Like every plan of this driver it assumes no planner
// statistics: the driver collects none, and an ANALYZE of a nearly empty
// fenced_jobs would make it walk the table (docs/design.md §10).
var endJobsSQL = `
UPDATE fenced_jobs SET
    state = CASE
        WHEN e.end_kind = 'complete' THEN 'succeeded'
        WHEN e.end_kind = 'cancel' OR cancel_requested THEN 'cancelled'
        WHEN e.end_kind = 'snooze' THEN 'queued'
        WHEN e.end_discard OR attempt >= max_attempts THEN 'failed'
        ELSE 'queued' END,
    finished_us = CASE
        WHEN e.end_kind IN ('complete', 'cancel') OR cancel_requested
            OR (e.end_kind = 'fail' AND (e.end_discard OR attempt >= max_attempts))
        THEN ` + nowUS + ` END,
    output = CASE WHEN e.end_kind = 'complete' THEN e.end_output ELSE output END,
    last_error = CASE
        WHEN e.end_kind IN ('fail', 'cancel') THEN e.end_error
        WHEN e.end_kind = 'complete' THEN NULL
        ELSE last_error END,
    run_at_us = CASE WHEN e.end_kind IN ('fail', 'snooze') THEN ` + nowUS + ` + CASE
            WHEN e.end_base_us IS NULL THEN e.end_delay_us
            ELSE ` + backoffUS("attempt", "e.end_base_us", "e.end_max_us", "e.end_jitter") + ` END
        ELSE run_at_us END,
    max_attempts = CASE WHEN e.end_kind = 'snooze' THEN max_attempts + 1 ELSE max_attempts END,
    lease_expires_us = NULL,
    updated_us = ` + nowUS + `
FROM (SELECT value ->> 0 AS end_id, value ->> 1 AS end_fence, value ->> 2 AS end_kind,
        CAST(unhex(value ->> 3) AS TEXT) AS end_output, CAST(unhex(value ->> 4) AS TEXT) AS end_error,
        value ->> 5 AS end_delay_us, value ->> 6 AS end_discard, value ->> 7 AS end_base_us,
        value ->> 8 AS end_max_us, value ->> 9 AS end_jitter
    FROM jsonb_each(?1)) AS e
WHERE fenced_jobs.id = e.end_id AND ` + endFenceMatch + ` AND ` + jobGuardByID + `
RETURNING id, state, updated_us, workflow_id IS NOT NULL`

// jobAttemptSQL records the attempt that just ended on job ?1, read from the
// row the ending statement left (updated_us is its clock reading).
const jobAttemptSQL = `
INSERT INTO fenced_job_attempts (job_id, attempt, fence, owner, started_us, ended_us, outcome, error)
SELECT id, attempt, fence, owner, attempted_us, updated_us, ?2, NULLIF(?3, '')
FROM fenced_jobs WHERE id = ?1`

// EndJobs implements driver.JobDriver: one write transaction (or the
// caller's) running the guarded end of the batch, for each attempt that
// did not complete its job its history row, and, for the tasks of
// workflows it finished, the release rule (workflowStep): only ends that
// changed a row feed it, so a stale end writes nothing and releases
// nothing. A job whose end changed nothing is diagnosed in the same
// transaction, a replay of how its attempt ended included (diagnoseEnd).
// With tx non-nil the caller already holds SQLite's write lock (a JobTx or
// its own IMMEDIATE transaction), so the writer slot is not taken again.
func (d *Driver) EndJobs(ctx context.Context, tx driver.Tx, ends []fencedtype.JobEnd) ([]error, []fencedtype.JobEnded, error) {
	return driver.EndJobsIn(ctx, tx, ends, sqlOf, d.writeTx, endJobs)
}

// endJobs ends each attempt of ends inside tx and says how each end that
// held was recorded. A batch naming a job more than once is ended in runs
// that name each job once, in order, so a later end of a job meets what an
// earlier one left, as it would alone; a batch with more than runBytes of
// output and error, in runs of about that much.
func endJobs(ctx context.Context, tx *sql.Tx, ends []fencedtype.JobEnd) ([]error, []fencedtype.JobEnded, error) {
	out := make([]error, len(ends))
	answers := make([]fencedtype.JobEnded, len(ends))
	var record *sql.Stmt // the history statement, prepared when first needed
	defer func() {
		if record != nil {
			record.Close()
		}
	}()
	seen := make(map[int64]struct{}, len(ends))
	for start := 0; start < len(ends); {
		stop := runOfDistinctJobs(ends, start, seen)
		run := ends[start:stop]
		ended, err := endRun(ctx, tx, run)
		if err != nil {
			return nil, nil, fmt.Errorf("end %d jobs from job %d: %w", len(run), run[0].Ref.ID, err)
		}
		for i, e := range run {
			r, ok := ended[e.Ref.ID]
			if !ok {
				if answers[start+i], out[start+i], err = diagnoseEnd(ctx, tx, e); err != nil {
					return nil, nil, err
				}
				continue
			}
			// A completed attempt stays on the row it leaves succeeded
			// (driver.WithRowAttempts): no history row.
			if e.Kind != fencedtype.EndComplete {
				if record == nil {
					if record, err = tx.PrepareContext(ctx, jobAttemptSQL); err != nil {
						return nil, nil, err
					}
				}
				if _, err := record.ExecContext(ctx, e.Ref.ID, endOutcome(e.Kind, r.state), e.Error); err != nil {
					return nil, nil, fmt.Errorf("job %d history: %w", e.Ref.ID, err)
				}
			}
			answers[start+i] = fencedtype.JobEnded{At: usTime(r.us)}
		}
		if err := releaseEnded(ctx, tx, ended); err != nil {
			return nil, nil, err
		}
		start = stop
	}
	return out, answers, nil
}

// endedAttemptSQL reads the history entry of one attempt of job ?1, the one
// of fence ?2.
const endedAttemptSQL = `SELECT attempt, fence, owner, started_us, ended_us, outcome, COALESCE(error, '')
FROM fenced_job_attempts WHERE job_id = ?1 AND fence = ?2`

// diagnoseEnd answers an end that changed nothing (driver.DiagnoseEnd): a
// replay of how its attempt ended, or its refusal; err is a failed read.
// Its reads are in the write transaction of the end, so they see every end
// committed before it.
func diagnoseEnd(ctx context.Context, tx *sql.Tx, e fencedtype.JobEnd) (ended fencedtype.JobEnded, refusal, err error) {
	j, err := readJob(ctx, tx, e.Ref.ID)
	if err != nil {
		return ended, nil, fmt.Errorf("read job %d: %w", e.Ref.ID, err)
	}
	var a *fencedtype.JobAttempt
	if j != nil && e.Kind != fencedtype.EndComplete {
		got, err := sqldb.One(ctx, tx, scanAttempt, endedAttemptSQL, e.Ref.ID, e.Ref.Fence)
		switch {
		case err == nil:
			a = &got
		case !errors.Is(err, fencedtype.ErrNotFound):
			return ended, nil, fmt.Errorf("read job %d attempt of fence %d: %w", e.Ref.ID, e.Ref.Fence, err)
		}
	}
	ended, refusal = driver.DiagnoseEnd(e, j, a)
	return ended, refusal, nil
}

// runBytes bounds the output and error text of one run of ends, and the
// args of one bulk insert: a batch of 1,000 jobs with 1 MiB each would
// otherwise make a JSON document of 2 GB, past SQLite's limit on a string
// (and the memory a worker expects to use). A single larger one goes alone.
const runBytes = 4 << 20

// runOfDistinctJobs returns where the run of ends starting at start stops:
// before the first end naming a job already named in the run, or once the
// run holds runBytes of output and error. seen is scratch space, cleared
// first.
func runOfDistinctJobs(ends []fencedtype.JobEnd, start int, seen map[int64]struct{}) int {
	clear(seen)
	size := 0
	for i := start; i < len(ends); i++ {
		if _, dup := seen[ends[i].Ref.ID]; dup || (i > start && size >= runBytes) {
			return i
		}
		seen[ends[i].Ref.ID] = struct{}{}
		size += len(ends[i].Output) + len(ends[i].Error)
	}
	return len(ends)
}

// endedJob is what endJobsSQL returns for a job it ended.
type endedJob struct {
	state fencedtype.JobState
	us    int64
	task  bool // a workflow's task
}

// releaseEnded applies the release rule for the tasks among ended that
// finished; nothing when none is a task.
func releaseEnded(ctx context.Context, tx *sql.Tx, ended map[int64]endedJob) error {
	var failed, succeeded []int64
	for id, r := range ended {
		switch {
		case !r.task:
		case r.state == fencedtype.JobSucceeded:
			succeeded = append(succeeded, id)
		case r.state == fencedtype.JobFailed || r.state == fencedtype.JobCancelled:
			failed = append(failed, id)
		}
	}
	if len(failed) == 0 && len(succeeded) == 0 {
		return nil
	}
	slices.Sort(failed)
	slices.Sort(succeeded)
	return workflowStep(ctx, tx, failed, succeeded)
}

// endRun runs endJobsSQL on run, whose ends name distinct jobs, and returns
// the jobs it ended by id.
func endRun(ctx context.Context, tx *sql.Tx, run []fencedtype.JobEnd) (map[int64]endedJob, error) {
	arg, err := endArgs(run)
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, endJobsSQL, arg)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ended := make(map[int64]endedJob, len(run))
	for rows.Next() {
		var id int64
		var state string
		var r endedJob
		if err := rows.Scan(&id, &state, &r.us, &r.task); err != nil {
			return nil, err
		}
		r.state = fencedtype.JobState(state)
		ended[id] = r
	}
	return ended, rows.Err()
}

// endArgs is endJobsSQL's ?1 for run.
func endArgs(run []fencedtype.JobEnd) (string, error) {
	elems := make([][10]any, len(run))
	for i, e := range run {
		var output any // none: null
		if e.Output != nil {
			output = hex.EncodeToString(e.Output)
		}
		var baseUS, maxUS, jitter any // no backoff: null
		if b := e.Backoff; b != nil {
			baseUS, maxUS, jitter = b.Base.Microseconds(), b.Max.Microseconds(), b.Jitter
		}
		elems[i] = [10]any{e.Ref.ID, e.Ref.Fence, string(e.Kind), output, hex.EncodeToString([]byte(e.Error)),
			e.Delay.Microseconds(), e.Discard, baseUS, maxUS, jitter}
	}
	b, err := json.Marshal(elems)
	return string(b), err
}

// isDiagnosis tells a diagnosed refusal from a failed read.
func isDiagnosis(err error) bool {
	return errors.Is(err, fencedtype.ErrStale) || errors.Is(err, fencedtype.ErrNotFound)
}

// endOutcome is the history outcome of an attempt ended by kind, leaving the
// job in state.
func endOutcome(kind fencedtype.EndKind, state fencedtype.JobState) string {
	switch {
	case kind == fencedtype.EndComplete:
		return fencedtype.OutcomeSucceeded
	case state == fencedtype.JobCancelled:
		return fencedtype.OutcomeCancelled
	case kind == fencedtype.EndSnooze:
		return fencedtype.OutcomeSnoozed
	case state == fencedtype.JobFailed:
		return fencedtype.OutcomeFailed
	}
	return fencedtype.OutcomeRetry
}
