package mysqldriver

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
// Qualified by the alias j, which every query reading them gives
// fenced_jobs.
const jobColumns = `j.id, j.kind, j.queue, j.args, j.priority, j.state, j.attempt, j.max_attempts, j.fence,
	COALESCE(j.owner, ''), j.run_at, j.lease_expires_at, j.cancel_requested, j.output, COALESCE(j.last_error, ''),
	j.progress, COALESCE(j.idempotency_key, ''), j.created_at, j.attempted_at, j.finished_at,
	COALESCE(j.concurrency_key, ''), COALESCE(j.sequence_key, ''), j.sequence_continue_on_failed, j.metadata,
	j.policy, j.tags, COALESCE(j.workflow_id, 0), COALESCE(j.task_name, ''), ` + now

const (
	getJobSQL = `SELECT ` + jobColumns + ` FROM fenced_jobs j WHERE j.id = ?`
	// jobLockSQL reads the current row for a diagnosis or a read-back,
	// share-locked until the transaction ends.
	jobLockSQL = getJobSQL + ` LOCK IN SHARE MODE`
)

// jobScan holds the scan targets of jobColumns.
type jobScan struct {
	j                                                fencedtype.Job
	state                                            string
	runAt, expires, created, attempted, finished, at dbTime
	policy, tags                                     []byte
}

func (s *jobScan) dest() []any {
	j := &s.j
	return []any{&j.ID, &j.Kind, &j.Queue, (*[]byte)(&j.Args), &j.Priority, &s.state, &j.Attempt, &j.MaxAttempts, &j.Fence,
		&j.Owner, &s.runAt, &s.expires, &j.CancelRequested, (*[]byte)(&j.Output), &j.LastError,
		(*[]byte)(&j.Progress), &j.IdempotencyKey, &s.created, &s.attempted, &s.finished,
		&j.ConcurrencyKey, &j.SequenceKey, &j.SequenceContinueOnFailed, (*[]byte)(&j.Metadata),
		&s.policy, &s.tags, &j.WorkflowID, &j.TaskName, &s.at}
}

// row is the job scanned; a policy column that does not decode (which
// its check and the writers rule out) reads as none.
func (s *jobScan) row() *fencedtype.Job {
	j := s.j
	if driver.DecodeJobPolicy(s.policy, &j) != nil {
		j.Timeout, j.Retry = 0, nil
	}
	j.State = fencedtype.JobState(s.state)
	j.RunAt, j.CreatedAt, j.DecidedAt = s.runAt.Time, s.created.Time, s.at.Time
	j.LeaseExpiresAt, j.AttemptedAt, j.FinishedAt = s.expires.ptr(), s.attempted.ptr(), s.finished.ptr()
	j.Tags = nil
	if s.tags != nil {
		// Written by tagsJSON, checked an array by the column's CHECK;
		// a failure leaves the job without tags rather than unreadable.
		_ = json.Unmarshal(s.tags, &j.Tags)
	}
	return &j
}

func scanJob(row sqldb.Scanner) (*fencedtype.Job, error) {
	var s jobScan
	if err := row.Scan(s.dest()...); err != nil {
		return nil, err
	}
	return s.row(), nil
}

// collectJobs scans the job rows a query returned.
func collectJobs(rows *sql.Rows, err error) ([]*fencedtype.Job, error) {
	return sqldb.Collect(rows, err, scanJob)
}

// readJob reads one job through q with query; nil, nil when it does not
// exist.
func readJob(ctx context.Context, q sqldb.Querier, query string, id int64) (*fencedtype.Job, error) {
	j, err := sqldb.One(ctx, q, scanJob, query, id)
	if errors.Is(err, fencedtype.ErrNotFound) {
		return nil, nil
	}
	return j, err
}

// readJobs reads the jobs with ids through q, by id.
func readJobs(ctx context.Context, q sqldb.Querier, ids []int64) (map[int64]*fencedtype.Job, error) {
	jobs, err := collectJobs(q.QueryContext(ctx, `SELECT `+jobColumns+` FROM fenced_jobs j WHERE j.id IN (`+placeholders(len(ids))+`)`, anys(ids)...))
	if err != nil {
		return nil, err
	}
	out := make(map[int64]*fencedtype.Job, len(jobs))
	for _, j := range jobs {
		out[j.ID] = j
	}
	return out, nil
}

func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// diagnoseJob explains, from a locking read through q (the deciding
// transaction), why a guarded write on ref changed nothing.
func diagnoseJob(ctx context.Context, q sqldb.Querier, ref fencedtype.JobRef) error {
	return sqldb.DiagnoseJob(ctx, q, scanJob, jobLockSQL, ref)
}

// jobPickSQL picks eligible jobs in claim order, skipping rows other
// claimers have locked; none when the queue is paused (queueNotPausedMySQL).
// Parameters: queue (three times), the kinds of the filter,
// limit. The queue is matched on queued_queue, which holds it only while
// the job is queued (migration 9). The first %s names the index, the
// second is the kind filter: none; one kind, read in claim order from the
// queued_kind index; or several, for which the queued index is walked in
// claim order and other kinds are skipped (left to itself the optimizer may
// read every job of those kinds through queued_kind and sort them, locking
// each row it reads).
//
// Each row is the whole job, as the claim returns it once started
// (startPicked), and says whether the claim is gated: the job has a
// concurrency or sequence key, or the queue has a global limit (a
// primary-key probe of fenced_job_limits; a subquery of a locking read
// reads without locking). A gated claim starts nothing here and goes the
// limited way.
const jobPickSQL = `
SELECT ` + jobColumns + `, j.concurrency_key IS NOT NULL OR j.sequence_key IS NOT NULL
    OR EXISTS (SELECT 1 FROM fenced_job_limits l WHERE l.queue = ? AND l.global_limit > 0)
FROM fenced_jobs j%s
WHERE ` + queueNotPausedMySQL + ` AND j.queued_queue = ? AND j.run_at <= ` + now + `%s
ORDER BY j.priority, j.run_at, j.id
LIMIT ?
FOR UPDATE SKIP LOCKED`

// jobPick returns the pick statement of a kind filter.
func jobPick(kinds int) string {
	switch kinds {
	case 0:
		return fmt.Sprintf(jobPickSQL, "", "")
	case 1:
		return fmt.Sprintf(jobPickSQL, " FORCE INDEX (fenced_jobs_queued_kind)", " AND j.kind = ?")
	default:
		return fmt.Sprintf(jobPickSQL, " FORCE INDEX (fenced_jobs_queued)", " AND j.kind IN ("+placeholders(kinds)+")")
	}
}

// jobStartSQL starts a new attempt on each picked (and locked) job: state
// running, fence and attempt bumped, lease from the database clock, whose
// reading it hands back (clockAsInsertID). Parameters: owner, ttl_us, then
// the ids.
const jobStartSQL = `
UPDATE fenced_jobs FORCE INDEX (PRIMARY) SET
    state = 'running', attempt = attempt + 1, fence = fence + 1, owner = ?,
    lease_expires_at = ` + now + ` + INTERVAL ? MICROSECOND,
    attempted_at = ` + now + `, updated_at = ` + now + `,
    cancel_requested = FALSE, progress = NULL
WHERE state = 'queued' AND id IN (%s) AND ` + clockAsInsertID

// errClaimGated stops the single claim when its pick found it gated.
var errClaimGated = errors.New("claim gated by keys or limits")

// ClaimJobs implements driver.JobDriver: pick and start in one short
// transaction; when the pick found the claim gated by keys or limits,
// claimLimitedJobs instead — at once, without the pick, for a queue whose
// last claim went that way (Driver.limited). The jobs come back in claim
// order.
func (d *Driver) ClaimJobs(ctx context.Context, p driver.ClaimJobsParams) ([]*fencedtype.Job, error) {
	var jobs []*fencedtype.Job
	var err error
	gated := d.limited.Has(p.Queue)
	if !gated {
		jobs, err = d.claimJobs(ctx, p)
		gated = errors.Is(err, errClaimGated)
	}
	if gated {
		jobs, err = d.claimLimitedJobs(ctx, p)
	}
	if err != nil {
		return nil, fmt.Errorf("claim from queue %q: %w", p.Queue, notMigrated(err))
	}
	// run_at is unchanged by the claim: this is the order they were picked in.
	reads.SortClaimed(jobs)
	return jobs, nil
}

// claimJobs is the single claim's transaction: the jobs it claimed, or
// errClaimGated.
func (d *Driver) claimJobs(ctx context.Context, p driver.ClaimJobsParams) ([]*fencedtype.Job, error) {
	var jobs []*fencedtype.Job
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		jobs = nil
		pick := append(append([]any{p.Queue, p.Queue, p.Queue}, anys(p.Kinds)...), p.Limit)
		type picked struct {
			job   *fencedtype.Job
			gated bool
		}
		rows, err := sqldb.All(ctx, tx, func(r sqldb.Scanner) (picked, error) {
			var s jobScan
			var p picked
			if err := r.Scan(append(s.dest(), &p.gated)...); err != nil {
				return p, err
			}
			p.job = s.row()
			return p, nil
		}, jobPick(len(p.Kinds)), pick...)
		if err != nil || len(rows) == 0 {
			return err
		}
		locked := make([]*fencedtype.Job, len(rows))
		for i, r := range rows {
			if r.gated {
				return errClaimGated
			}
			locked[i] = r.job
		}
		jobs, err = startPicked(ctx, tx, p, locked)
		return err
	})
	return jobs, err
}

// startIDs starts the jobs ids, locked by tx (jobStartSQL), and returns
// the statement's clock reading: the attempts' start, and their leases'
// base. It must start every job it names.
func startIDs(ctx context.Context, tx *sql.Tx, p driver.ClaimJobsParams, ids []int64) (time.Time, error) {
	args := append([]any{p.Owner, p.TTL.Microseconds()}, anys(ids)...)
	n, at, err := execAt(ctx, tx, fmt.Sprintf(jobStartSQL, placeholders(len(ids))), args...)
	if err == nil && n != int64(len(ids)) {
		err = fmt.Errorf("started %d of %d locked jobs", n, len(ids))
	}
	return at, err
}

// startPicked starts jobs, read whole and locked (FOR UPDATE) by tx's pick,
// and returns them as the start left them, without reading them again: the
// rows stay locked from the pick to the end of tx, so they hold what the
// pick read with jobStartSQL's assignments applied, at the statement's
// clock reading.
func startPicked(ctx context.Context, tx *sql.Tx, p driver.ClaimJobsParams, jobs []*fencedtype.Job) ([]*fencedtype.Job, error) {
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	at, err := startIDs(ctx, tx, p, ids)
	if err != nil {
		return nil, err
	}
	expires := at.Add(time.Duration(p.TTL.Microseconds()) * time.Microsecond)
	for _, j := range jobs {
		j.State, j.Attempt, j.Fence, j.Owner = fencedtype.JobRunning, j.Attempt+1, j.Fence+1, p.Owner
		started, until := at, expires // each job its own: callers may write through them
		j.LeaseExpiresAt, j.AttemptedAt = &until, &started
		j.CancelRequested, j.Progress, j.DecidedAt = false, nil, at
	}
	return jobs, nil
}

// startJobs starts the jobs ids, locked by tx, and reads them back.
func startJobs(ctx context.Context, tx *sql.Tx, p driver.ClaimJobsParams, ids []int64) ([]*fencedtype.Job, error) {
	if _, err := startIDs(ctx, tx, p, ids); err != nil {
		return nil, err
	}
	byID, err := readJobs(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	jobs := make([]*fencedtype.Job, 0, len(ids))
	for _, id := range ids {
		j := byID[id]
		if j == nil || j.AttemptedAt == nil {
			return nil, fmt.Errorf("claimed job %d not found in its own transaction", id)
		}
		j.DecidedAt = *j.AttemptedAt // the claim's own clock reading
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// collectIDs scans the rows of ids a query returned.
func collectIDs(rows *sql.Rows, err error) ([]int64, error) {
	return sqldb.Collect(rows, err, sqldb.Value[int64])
}

// jobGuard is the condition every worker-owned write carries.
//
// Every statement that names its jobs by id reads them through the primary
// key (FORCE INDEX): left to itself the optimizer may walk an index that
// leads with state, and a locking statement then locks, or waits for, every
// row in that state, other workers' included.
const jobGuard = `state = 'running' AND lease_expires_at > ` + now

// reportProgressSQL stores a running attempt's progress and hands back its
// clock reading (clockAsInsertID). Parameters: progress, id, fence.
const reportProgressSQL = `UPDATE fenced_jobs FORCE INDEX (PRIMARY) SET progress = ?, updated_at = ` + now + `
WHERE id = ? AND fence = ? AND ` + jobGuard + ` AND ` + clockAsInsertID

// ReportProgress implements driver.JobDriver: one guarded statement; a refusal
// is diagnosed by a read after it.
func (d *Driver) ReportProgress(ctx context.Context, ref fencedtype.JobRef, progress []byte) (time.Time, error) {
	n, at, err := execAt(ctx, d.db, reportProgressSQL, string(progress), ref.ID, ref.Fence)
	if err != nil {
		return time.Time{}, fmt.Errorf("progress of job %d: %w", ref.ID, notMigrated(err))
	}
	if n == 1 {
		return at, nil
	}
	return time.Time{}, diagnoseJob(ctx, d.db, ref)
}

// mergeMetadataSQL merges a JSON Merge Patch into a running attempt's
// metadata (none taken as {}) when the merged object prints in at most the
// bound's bytes; %[1]s is the merge (mergeExpr: JSON_MERGE_PATCH, and
// JSON_REMOVE for the patch's nulls, see splitPatch). Parameters: the
// merge's, id, fence, the merge's again, the bound.
const mergeMetadataSQL = `UPDATE fenced_jobs FORCE INDEX (PRIMARY)
SET metadata = %[1]s, updated_at = ` + now + `
WHERE id = ? AND fence = ? AND ` + jobGuard + ` AND LENGTH(%[1]s) <= ?`

// MergeJobMetadata implements driver.JobDriver: the guarded statement, then
// in the same transaction the merged metadata read back (the update's row
// lock holds it) or, when it changed nothing, the diagnosis.
func (d *Driver) MergeJobMetadata(ctx context.Context, ref fencedtype.JobRef, patch []byte, maxBytes int) ([]byte, time.Time, error) {
	rest, removes, err := splitPatch(patch)
	if err != nil {
		return nil, time.Time{}, err
	}
	query := fmt.Sprintf(mergeMetadataSQL, mergeExpr(len(removes)))
	merge := []any{string(rest)}
	for _, p := range removes {
		merge = append(merge, p)
	}
	args := append(append(append(append([]any{}, merge...), ref.ID, ref.Fence), merge...), maxBytes)
	var merged []byte
	var at dbTime
	var refused error
	err = d.inTx(ctx, func(tx *sql.Tx) error {
		merged, refused = nil, nil
		n, err := execCount(ctx, tx, query, args...)
		if err != nil {
			return err
		}
		if n == 1 {
			return tx.QueryRowContext(ctx, `SELECT metadata, updated_at FROM fenced_jobs WHERE id = ?`, ref.ID).Scan(&merged, &at)
		}
		j, err := sqldb.One(ctx, tx, scanJob, jobLockSQL, ref.ID)
		if errors.Is(err, fencedtype.ErrNotFound) {
			j, err = nil, nil
		}
		if err != nil {
			return err
		}
		refused = driver.DiagnoseMerge(ref, j, maxBytes)
		return nil
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("merge metadata of job %d: %w", ref.ID, notMigrated(err))
	}
	return merged, at.Time, refused
}

// jobGuardSQL share-locks the job row iff ref is its current running
// attempt with an unexpired lease. Parameters: id, fence.
const jobGuardSQL = `SELECT 1 FROM fenced_jobs FORCE INDEX (PRIMARY) WHERE id = ? AND ` + guardFenceMatch + ` AND ` + jobGuard + ` LOCK IN SHARE MODE`

// GuardJob checks, inside the caller's own transaction, that ref is the
// job's current running attempt with an unexpired lease, and share-locks the
// job row until the transaction ends, so recovery and re-claims wait for it.
// It returns *fencedtype.StaleError or fencedtype.ErrNotFound when the check fails;
// the caller must then roll back.
func (d *Driver) GuardJob(ctx context.Context, tx *sql.Tx, ref fencedtype.JobRef) error {
	return sqldb.Guard(ctx, tx, fmt.Sprintf("job %d", ref.ID), func() error { return diagnoseJob(ctx, tx, ref) },
		jobGuardSQL, ref.ID, ref.Fence)
}

// JobTx implements driver.JobDriver. It is not retried: fn is the caller's
// code.
func (d *Driver) JobTx(ctx context.Context, ref fencedtype.JobRef, fn func(driver.Tx) error) error {
	return runTx(ctx, d.db, func(tx *sql.Tx) error {
		if err := d.GuardJob(ctx, tx, ref); err != nil {
			return err
		}
		return fn(&Tx{tx: tx})
	})
}
