package sqlitedriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

var _ driver.JobDriver = (*Driver)(nil)

// jobColumns is the column list every job read returns, in scanJob's order.
// Unqualified, so it also serves as a RETURNING list.
const jobColumns = `id, kind, queue, args, priority, state, attempt, max_attempts, fence,
	COALESCE(owner, ''), run_at_us, lease_expires_us, cancel_requested, output, COALESCE(last_error, ''),
	progress, COALESCE(idempotency_key, ''), created_us, attempted_us, finished_us,
	COALESCE(concurrency_key, ''), COALESCE(sequence_key, ''), sequence_continue_on_failed, ` + nowUS

const getJobSQL = `SELECT ` + jobColumns + ` FROM fenced_jobs WHERE id = ?1`

func scanJob(row sqldb.Scanner) (*fencedtype.Job, error) {
	var j fencedtype.Job
	var state string
	var runAt, created, now int64
	var expires, attempted, finished sql.NullInt64
	err := row.Scan(&j.ID, &j.Kind, &j.Queue, (*[]byte)(&j.Args), &j.Priority, &state, &j.Attempt, &j.MaxAttempts, &j.Fence,
		&j.Owner, &runAt, &expires, &j.CancelRequested, (*[]byte)(&j.Output), &j.LastError,
		(*[]byte)(&j.Progress), &j.IdempotencyKey, &created, &attempted, &finished,
		&j.ConcurrencyKey, &j.SequenceKey, &j.SequenceContinueOnFailed, &now)
	if err != nil {
		return nil, err
	}
	j.State = fencedtype.JobState(state)
	j.RunAt, j.CreatedAt, j.DecidedAt = usTime(runAt), usTime(created), usTime(now)
	j.LeaseExpiresAt, j.AttemptedAt, j.FinishedAt = usTimePtr(expires), usTimePtr(attempted), usTimePtr(finished)
	return &j, nil
}

func usTime(us int64) time.Time { return time.UnixMicro(us).UTC() }

func usTimePtr(us sql.NullInt64) *time.Time {
	if !us.Valid {
		return nil
	}
	t := usTime(us.Int64)
	return &t
}

// readJob reads one job inside tx; nil, nil when it does not exist.
func readJob(ctx context.Context, tx *sql.Tx, id int64) (*fencedtype.Job, error) {
	j, err := sqldb.One(ctx, tx, scanJob, getJobSQL, id)
	if errors.Is(err, fencedtype.ErrNotFound) {
		return nil, nil
	}
	return j, err
}

// diagnoseJob explains, from a read in the same write transaction as the
// write that changed nothing, why ref is no longer current.
func diagnoseJob(ctx context.Context, tx *sql.Tx, ref fencedtype.JobRef) error {
	return sqldb.DiagnoseJob(ctx, tx, scanJob, getJobSQL, ref)
}

// claimJobsSQL picks eligible jobs in priority order and starts a new attempt
// on each: state running, fence and attempt bumped, lease from the database
// clock. SQLite has one writer, so nothing needs skipping: the pick and the
// update are one statement under the write lock. %s is the kind filter:
// none, one kind (?5: the claim_kind index serves it in claim order), or
// several (?5 a JSON array: the claim index is walked in claim order and
// other kinds are skipped).
//
// A paused queue (queueNotPausedSQLite, in the pick) yields no job.
//
// It claims only when no job it picked has a concurrency or sequence key
// and the queue has no global limit (claimGatedSQL); otherwise it starts
// nothing, and ClaimJobs goes the limited way.
const claimJobsSQL = `
WITH picked AS (
    SELECT id, (concurrency_key IS NOT NULL OR sequence_key IS NOT NULL) AS keyed FROM fenced_jobs
    WHERE state = 'queued' AND queue = ?1 AND run_at_us <= ` + nowUS + `%[1]s
        AND ` + queueNotPausedSQLite + `
    ORDER BY priority, run_at_us, id
    LIMIT ?3)
UPDATE fenced_jobs SET
    state = 'running', attempt = attempt + 1, fence = fence + 1, owner = ?2,
    lease_expires_us = ` + nowUS + ` + ?4,
    attempted_us = ` + nowUS + `, updated_us = ` + nowUS + `,
    cancel_requested = 0, progress = NULL
WHERE id IN (SELECT id FROM picked) AND NOT ` + claimGatedSQL + `
RETURNING ` + jobColumns

// claimGatedSQL is true when a claim must go the limited way: a job of
// picked has a key, or the queue has a global limit.
const claimGatedSQL = `(EXISTS (SELECT 1 FROM picked WHERE keyed)
    OR EXISTS (SELECT 1 FROM fenced_job_limits WHERE queue = ?1 AND global_limit > 0))`

// claimGatedCheckSQL tells, when claimJobsSQL started nothing, whether it
// was gated (and the limited claim must run) or found nothing eligible. It
// only reads. Parameters as claimJobsSQL's (?2 and ?4 unused).
const claimGatedCheckSQL = `
WITH picked AS (
    SELECT id, (concurrency_key IS NOT NULL OR sequence_key IS NOT NULL) AS keyed FROM fenced_jobs
    WHERE state = 'queued' AND queue = ?1 AND run_at_us <= ` + nowUS + `%[1]s
        AND ` + queueNotPausedSQLite + `
    ORDER BY priority, run_at_us, id
    LIMIT ?3)
SELECT ` + claimGatedSQL

// The claim statements of each kind filter.
var (
	claimJobsAnyKindSQL = fmt.Sprintf(claimJobsSQL, "")
	claimJobsOneKindSQL = fmt.Sprintf(claimJobsSQL, " AND kind = ?5")
	claimJobsOfKindsSQL = fmt.Sprintf(claimJobsSQL, " AND kind IN (SELECT value FROM json_each(?5))")

	claimGatedAnyKindSQL = fmt.Sprintf(claimGatedCheckSQL, "")
	claimGatedOneKindSQL = fmt.Sprintf(claimGatedCheckSQL, " AND kind = ?5")
	claimGatedOfKindsSQL = fmt.Sprintf(claimGatedCheckSQL, " AND kind IN (SELECT value FROM json_each(?5))")
)

// ClaimJobs implements driver.JobDriver: claimJobsSQL, and when it started
// nothing because the claim was gated by keys or limits, claimLimitedJobs.
// The jobs come back in the order they were picked.
func (d *Driver) ClaimJobs(ctx context.Context, p driver.ClaimJobsParams) ([]*fencedtype.Job, error) {
	args := []any{p.Queue, p.Owner, p.Limit, p.TTL.Microseconds()}
	query, gate := claimJobsAnyKindSQL, claimGatedAnyKindSQL
	var kindArg any
	switch len(p.Kinds) {
	case 0:
	case 1:
		query, gate, kindArg = claimJobsOneKindSQL, claimGatedOneKindSQL, p.Kinds[0]
		args = append(args, kindArg)
	default:
		kinds, err := json.Marshal(p.Kinds)
		if err != nil {
			return nil, err
		}
		query, gate, kindArg = claimJobsOfKindsSQL, claimGatedOfKindsSQL, string(kinds)
		args = append(args, kindArg)
	}
	var jobs []*fencedtype.Job
	err := d.write(ctx, func() (err error) {
		for {
			jobs, err = sqldb.All(ctx, d.db, scanJob, query, args...)
			if !busy(err) || ctx.Err() != nil {
				return err
			}
		}
	})
	if err == nil && len(jobs) == 0 {
		var gated bool
		if err = d.db.QueryRowContext(ctx, gate, args...).Scan(&gated); err == nil && gated {
			jobs, err = d.claimLimitedJobs(ctx, p, kindArg)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("claim from queue %q: %w", p.Queue, err)
	}
	// RETURNING order is unspecified; run_at is unchanged by the claim.
	driver.SortClaimed(jobs)
	return jobs, nil
}

// jobGuard is the condition every worker-owned write carries.
const jobGuard = `state = 'running' AND lease_expires_us > ` + nowUS

const heartbeatJobsSQL = `
UPDATE fenced_jobs SET lease_expires_us = ` + nowUS + ` + ?3
WHERE id = ?1 AND fence = ?2 AND ` + jobGuard + `
RETURNING cancel_requested, lease_expires_us`

// HeartbeatJobs implements driver.JobDriver, one guarded statement per job in
// one write transaction. ExpiresAt is the earliest new expiry.
func (d *Driver) HeartbeatJobs(ctx context.Context, refs []fencedtype.JobRef, ttl time.Duration) (*fencedtype.HeartbeatResult, error) {
	res := &fencedtype.HeartbeatResult{}
	err := d.writeTx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, heartbeatJobsSQL)
		if err != nil {
			return err
		}
		defer stmt.Close()
		seen := map[int64]bool{}
		for _, r := range refs {
			if seen[r.ID] {
				continue
			}
			var cancel bool
			var expires int64
			err := stmt.QueryRowContext(ctx, r.ID, r.Fence, ttl.Microseconds()).Scan(&cancel, &expires)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			seen[r.ID] = true
			res.Extended = append(res.Extended, r.ID)
			if cancel {
				res.CancelRequested = append(res.CancelRequested, r.ID)
			}
			if t := usTime(expires); res.ExpiresAt.IsZero() || t.Before(res.ExpiresAt) {
				res.ExpiresAt = t
			}
		}
		// One writer: the statement waited for no row, so a job it did
		// not extend is no longer current.
		return driver.SplitUnextended(res, refs, nil)
	})
	if err != nil {
		return nil, fmt.Errorf("heartbeat: %w", err)
	}
	return res, nil
}

// endJobsSQL ends one attempt, guarded by its fence. A failure retries
// (queued, run_at = now + delay) unless attempts are exhausted or it is
// discarded; a snooze does not count against max_attempts. A job asked to
// cancel that fails or snoozes ends cancelled. A completion clears the
// job's last error (the history keeps each attempt's). A failure given a
// backoff (?8 not NULL) waits the backoff of its attempt (backoffUS)
// instead of ?6. The clock is read once per statement (SQLite's 'now'
// holds for a whole statement), so the end is recorded at the reading its
// guard used, which it returns. Parameters: ?1 id, ?2 fence, ?3 kind,
// ?4 output, ?5 error, ?6 delay_us, ?7 discard, ?8 backoff base_us (NULL
// for none), ?9 max_us, ?10 jitter.
var endJobsSQL = `
UPDATE fenced_jobs SET
    state = CASE
        WHEN ?3 = 'complete' THEN 'succeeded'
        WHEN ?3 = 'cancel' OR cancel_requested THEN 'cancelled'
        WHEN ?3 = 'snooze' THEN 'queued'
        WHEN ?7 OR attempt >= max_attempts THEN 'failed'
        ELSE 'queued' END,
    finished_us = CASE
        WHEN ?3 IN ('complete', 'cancel') OR cancel_requested OR (?3 = 'fail' AND (?7 OR attempt >= max_attempts))
        THEN ` + nowUS + ` END,
    output = CASE WHEN ?3 = 'complete' THEN ?4 ELSE output END,
    last_error = CASE WHEN ?3 IN ('fail', 'cancel') THEN ?5 WHEN ?3 = 'complete' THEN NULL ELSE last_error END,
    run_at_us = CASE WHEN ?3 IN ('fail', 'snooze') THEN ` + nowUS + ` + CASE
            WHEN ?8 IS NULL THEN ?6
            ELSE ` + backoffUS("attempt", "?8", "?9", "?10") + ` END
        ELSE run_at_us END,
    max_attempts = CASE WHEN ?3 = 'snooze' THEN max_attempts + 1 ELSE max_attempts END,
    lease_expires_us = NULL,
    updated_us = ` + nowUS + `
WHERE id = ?1 AND fence = ?2 AND ` + jobGuard + `
RETURNING state, updated_us`

// jobAttemptSQL records the attempt that just ended on job ?1, read from the
// row the ending statement left (updated_us is its clock reading).
const jobAttemptSQL = `
INSERT INTO fenced_job_attempts (job_id, attempt, fence, owner, started_us, ended_us, outcome, error)
SELECT id, attempt, fence, owner, attempted_us, updated_us, ?2, NULLIF(?3, '')
FROM fenced_jobs WHERE id = ?1`

// EndJobs implements driver.JobDriver: one write transaction (or the
// caller's) running, per job, the guarded end and, unless it completed the
// job, its history row. A job
// whose end changed nothing is diagnosed in the same transaction. With tx
// non-nil the caller already holds SQLite's write lock (a JobTx or its own
// IMMEDIATE transaction), so the writer slot is not taken again.
func (d *Driver) EndJobs(ctx context.Context, tx driver.Tx, ends []fencedtype.JobEnd) ([]error, time.Time, error) {
	return driver.EndJobsIn(ctx, tx, ends, sqlOf, d.writeTx, endJobs)
}

// endJobs ends each attempt of ends inside tx, in order, and returns the
// latest clock reading an end was recorded at.
func endJobs(ctx context.Context, tx *sql.Tx, ends []fencedtype.JobEnd) ([]error, time.Time, error) {
	var at time.Time
	end, err := tx.PrepareContext(ctx, endJobsSQL)
	if err != nil {
		return nil, at, err
	}
	defer end.Close()
	record, err := tx.PrepareContext(ctx, jobAttemptSQL)
	if err != nil {
		return nil, at, err
	}
	defer record.Close()
	out := make([]error, len(ends))
	for i, e := range ends {
		var output any
		if e.Output != nil {
			output = string(e.Output)
		}
		var baseUS, maxUS, jitter any // no backoff: NULL
		if b := e.Backoff; b != nil {
			baseUS, maxUS, jitter = b.Base.Microseconds(), b.Max.Microseconds(), b.Jitter
		}
		var state string
		var us int64
		err := end.QueryRowContext(ctx, e.Ref.ID, e.Ref.Fence, string(e.Kind), output, e.Error,
			e.Delay.Microseconds(), e.Discard, baseUS, maxUS, jitter).Scan(&state, &us)
		if errors.Is(err, sql.ErrNoRows) {
			if out[i] = diagnoseJob(ctx, tx, e.Ref); !isDiagnosis(out[i]) {
				return nil, time.Time{}, out[i]
			}
			continue
		}
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("job %d: %w", e.Ref.ID, err)
		}
		// A completed attempt stays on the row it leaves succeeded
		// (driver.WithRowAttempts): no history row.
		if e.Kind != fencedtype.EndComplete {
			if _, err := record.ExecContext(ctx, e.Ref.ID, endOutcome(e.Kind, fencedtype.JobState(state)), e.Error); err != nil {
				return nil, time.Time{}, fmt.Errorf("job %d history: %w", e.Ref.ID, err)
			}
		}
		if t := usTime(us); t.After(at) {
			at = t
		}
	}
	return out, at, nil
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

// reportProgressSQL stores a running attempt's progress and returns the
// clock reading it was stored at.
const reportProgressSQL = `UPDATE fenced_jobs SET progress = ?3, updated_us = ` + nowUS + `
WHERE id = ?1 AND fence = ?2 AND ` + jobGuard + `
RETURNING updated_us`

// ReportProgress implements driver.JobDriver: the guarded statement and, when
// it changed nothing, the diagnosis, in one write transaction.
func (d *Driver) ReportProgress(ctx context.Context, ref fencedtype.JobRef, progress []byte) (time.Time, error) {
	var refused error
	var us int64
	err := d.writeTx(ctx, func(tx *sql.Tx) error {
		refused = nil
		err := tx.QueryRowContext(ctx, reportProgressSQL, ref.ID, ref.Fence, string(progress)).Scan(&us)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if refused = diagnoseJob(ctx, tx, ref); !isDiagnosis(refused) {
			return refused
		}
		return nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("progress of job %d: %w", ref.ID, err)
	}
	if refused != nil {
		return time.Time{}, refused
	}
	return usTime(us), nil
}

const jobGuardSQL = `SELECT 1 FROM fenced_jobs WHERE id = ?1 AND fence = ?2 AND ` + jobGuard

// JobTx implements driver.JobDriver. The guard is the first statement of an
// IMMEDIATE transaction, so recovery and re-claims (writes) wait until it
// ends. A failed guard is diagnosed inside the same transaction, then rolled
// back. fn must do its writes through the driver.Tx it is given (EndJobs
// and Enqueue take it): the writer slot is held while fn runs.
func (d *Driver) JobTx(ctx context.Context, ref fencedtype.JobRef, fn func(driver.Tx) error) error {
	return d.writeTx(ctx, func(tx *sql.Tx) error {
		if err := d.GuardJob(ctx, tx, ref); err != nil {
			return err
		}
		return fn(&Tx{tx: tx})
	})
}

// GuardJob checks, inside the caller's own transaction, which must have
// begun IMMEDIATE, that ref is the job's current running attempt with an
// unexpired lease. It returns *fencedtype.StaleError or fencedtype.ErrNotFound when
// the check fails; the caller must then roll back.
func (d *Driver) GuardJob(ctx context.Context, tx *sql.Tx, ref fencedtype.JobRef) error {
	return sqldb.Guard(ctx, tx, fmt.Sprintf("job %d", ref.ID), func() error { return diagnoseJob(ctx, tx, ref) },
		jobGuardSQL, ref.ID, ref.Fence)
}
