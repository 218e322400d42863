package sqlitedriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/fenced/fenced/driver/internal/reads"
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
	COALESCE(concurrency_key, ''), COALESCE(sequence_key, ''), sequence_continue_on_failed, metadata,
	policy, tags, COALESCE(workflow_id, 0), COALESCE(task_name, ''), ` + nowUS

const getJobSQL = `SELECT ` + jobColumns + ` FROM fenced_jobs WHERE id = ?1`

func scanJob(row sqldb.Scanner) (*fencedtype.Job, error) {
	var j fencedtype.Job
	var state string
	var runAt, created, now int64
	var expires, attempted, finished sql.NullInt64
	var policy, tags []byte
	err := row.Scan(&j.ID, &j.Kind, &j.Queue, (*[]byte)(&j.Args), &j.Priority, &state, &j.Attempt, &j.MaxAttempts, &j.Fence,
		&j.Owner, &runAt, &expires, &j.CancelRequested, (*[]byte)(&j.Output), &j.LastError,
		(*[]byte)(&j.Progress), &j.IdempotencyKey, &created, &attempted, &finished,
		&j.ConcurrencyKey, &j.SequenceKey, &j.SequenceContinueOnFailed, (*[]byte)(&j.Metadata),
		&policy, &tags, &j.WorkflowID, &j.TaskName, &now)
	if err != nil {
		return nil, err
	}
	if err := driver.DecodeJobPolicy(policy, &j); err != nil {
		return nil, err
	}
	if tags != nil {
		if err := json.Unmarshal(tags, &j.Tags); err != nil {
			return nil, fmt.Errorf("job %d: tags %q: %w", j.ID, tags, err)
		}
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
		return nil, fmt.Errorf("claim from queue %q: %w", p.Queue, notMigrated(err))
	}
	// RETURNING order is unspecified; run_at is unchanged by the claim.
	reads.SortClaimed(jobs)
	return jobs, nil
}

// jobGuard is the condition every worker-owned write carries.
const jobGuard = `state = 'running' AND lease_expires_us > ` + nowUS

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

// mergeMetadataSQL merges a JSON Merge Patch (?3) into a running attempt's
// metadata (none taken as {}) with json_patch, SQLite's RFC 7396, when the
// merged object takes at most ?4 bytes, and returns it.
const mergeMetadataSQL = `UPDATE fenced_jobs SET metadata = json_patch(COALESCE(metadata, '{}'), ?3),
    updated_us = ` + nowUS + `
WHERE id = ?1 AND fence = ?2 AND ` + jobGuard + `
    AND length(CAST(json_patch(COALESCE(metadata, '{}'), ?3) AS BLOB)) <= ?4
RETURNING metadata, updated_us`

// MergeJobMetadata implements driver.JobDriver: the guarded statement and,
// when it changed nothing, the diagnosis, in one write transaction.
func (d *Driver) MergeJobMetadata(ctx context.Context, ref fencedtype.JobRef, patch []byte, maxBytes int) ([]byte, time.Time, error) {
	var refused error
	var merged []byte
	var us int64
	err := d.writeTx(ctx, func(tx *sql.Tx) error {
		refused = nil
		err := tx.QueryRowContext(ctx, mergeMetadataSQL, ref.ID, ref.Fence, string(patch), maxBytes).Scan(&merged, &us)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		j, err := readJob(ctx, tx, ref.ID)
		if err != nil {
			return err
		}
		refused = driver.DiagnoseMerge(ref, j, maxBytes)
		return nil
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("merge metadata of job %d: %w", ref.ID, notMigrated(err))
	}
	if refused != nil {
		return nil, time.Time{}, refused
	}
	return merged, usTime(us), nil
}

const jobGuardSQL = `SELECT 1 FROM fenced_jobs WHERE id = ?1 AND ` + guardFenceMatch + ` AND ` + jobGuard

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
