package pgdriver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var _ driver.JobDriver = (*Driver)(nil)

// jobColumns is the column list every job read returns, in scanJob's order.
const jobColumns = `j.id, j.kind, j.queue, j.args, j.priority, j.state, j.attempt, j.max_attempts, j.fence,
	COALESCE(j.owner, ''), j.run_at, j.lease_expires_at, j.cancel_requested, j.output, COALESCE(j.last_error, ''),
	j.progress, COALESCE(j.idempotency_key, ''), j.created_at, j.attempted_at, j.finished_at,
	COALESCE(j.concurrency_key, ''), COALESCE(j.sequence_key, ''), j.sequence_continue_on_failed, j.metadata,
	j.policy, j.tags, COALESCE(j.workflow_id, 0), COALESCE(j.task_name, ''),
	clock_timestamp()`

func scanJob(row pgx.Row) (*fencedtype.Job, error) {
	return newJobScanner().scan(row)
}

// jobScanner scans rows of jobColumns, followed by extra columns, into new
// Jobs. Its destinations are one slice for every row it scans: a claim of a
// batch allocates the jobs, not a slice of destinations per job. Make it
// with newJobScanner.
type jobScanner struct {
	dest   []any
	state  string
	policy []byte
}

// newJobScanner scans jobColumns, then the extra destinations given.
func newJobScanner(extra ...any) *jobScanner {
	return &jobScanner{dest: append(make([]any, jobColumnCount, jobColumnCount+len(extra)), extra...)}
}

// jobColumnCount is the number of jobColumns.
const jobColumnCount = 29

// jobClockColumn is the index of clock_timestamp() (DecidedAt) in
// jobColumns, the last.
const jobClockColumn = 28

func (s *jobScanner) scan(row pgx.Row) (*fencedtype.Job, error) {
	j := new(fencedtype.Job)
	d := s.dest
	d[0], d[1], d[2], d[3], d[4], d[5] = &j.ID, &j.Kind, &j.Queue, (*[]byte)(&j.Args), &j.Priority, &s.state
	d[6], d[7], d[8], d[9], d[10], d[11] = &j.Attempt, &j.MaxAttempts, &j.Fence, &j.Owner, &j.RunAt, &j.LeaseExpiresAt
	d[12], d[13], d[14], d[15], d[16] = &j.CancelRequested, (*[]byte)(&j.Output), &j.LastError, (*[]byte)(&j.Progress), &j.IdempotencyKey
	d[17], d[18], d[19], d[20], d[21] = &j.CreatedAt, &j.AttemptedAt, &j.FinishedAt, &j.ConcurrencyKey, &j.SequenceKey
	d[22], d[23] = &j.SequenceContinueOnFailed, (*[]byte)(&j.Metadata)
	d[24], d[25], d[26], d[27] = &s.policy, &j.Tags, &j.WorkflowID, &j.TaskName
	d[jobClockColumn] = &j.DecidedAt
	err := row.Scan(d...)
	j.State = fencedtype.JobState(s.state)
	if err == nil {
		err = driver.DecodeJobPolicy(s.policy, j)
	}
	return j, err
}

func collectJobs(rows pgx.Rows, err error) ([]*fencedtype.Job, error) {
	s := newJobScanner()
	return collectRows(rows, err, func(r pgx.CollectableRow) (*fencedtype.Job, error) { return s.scan(r) })
}

// claimJobsSQL is the claim without a kind filter: it picks eligible jobs in
// priority order from fenced_jobs_claim (every queued job, in or out of a
// lane, that is not held behind its sequence: jobhold.go), skipping rows other claimers have locked, and starts a new attempt
// on each: state running, fence and attempt bumped, lease from the database
// clock. A claim filtered by kind, a worker's, goes by the lanes instead
// (claimLanesSQL). It moves no lane's cursor: a lane's job it claims is no
// longer queued, and the lane's next claim passes it.
//
// A paused queue (queueNotPausedPG, in the pick) yields no job.
//
// It claims only when no job it picked has a concurrency or sequence key
// and the queue has no global limit (gated: a primary-key probe of
// fenced_job_limits). Otherwise it starts nothing and returns the first job
// it picked, unchanged, with gated true: the claim then goes the limited
// way (claimLimitedJobs). Claimed rows come back with gated false.
const claimJobsSQL = `
WITH picked AS (
    SELECT id, (concurrency_key IS NOT NULL OR sequence_key IS NOT NULL) AS keyed FROM fenced_jobs
    WHERE state = 'queued' AND NOT held AND queue = $1 AND run_at <= clock_timestamp()
        AND ` + queueNotPausedPG + `
    ORDER BY priority, run_at, id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), ` + claimGatedSQL + `, ` + claimStartSQL

// claimGatedSQL is a claim's gate, of the jobs it picked (picked: id,
// keyed): a keyed job among them, or a global limit of queue $1.
const claimGatedSQL = `gated AS (
    SELECT EXISTS (SELECT 1 FROM picked WHERE keyed)
        OR EXISTS (SELECT 1 FROM fenced_job_limits WHERE queue = $1 AND global_limit > 0) AS yes
)`

// claimStartSQL ends a claim's statement: unless gated, it starts an
// attempt on every picked job and returns them (gated false); else it
// returns the first picked job as it is (gated true).
const claimStartSQL = `claimed AS (
    UPDATE fenced_jobs j SET ` + jobStartSet + `
    WHERE j.id = ANY(ARRAY(SELECT id FROM picked)) AND NOT (SELECT yes FROM gated)
    RETURNING ` + jobColumns + `
)
SELECT c.*, false FROM claimed c
UNION ALL
SELECT ` + jobColumns + `, true FROM fenced_jobs j
WHERE (SELECT yes FROM gated) AND j.id = (SELECT min(id) FROM picked)`

// jobStartSet starts a new attempt on a claimed row ($2 owner, $4 ttl_us).
const jobStartSet = `
    state = 'running', attempt = j.attempt + 1, fence = j.fence + 1, owner = $2,
    lease_expires_at = clock_timestamp() + $4::bigint * interval '1 microsecond',
    attempted_at = clock_timestamp(), updated_at = clock_timestamp(),
    cancel_requested = false, progress = NULL`

// ClaimJobs implements driver.JobDriver: claimJobsSQL, and when it found
// the claim gated by keys or limits, claimLimitedJobs. A queue whose last
// claim went the limited way goes there at once (Driver.limited).
func (d *Driver) ClaimJobs(ctx context.Context, p driver.ClaimJobsParams) ([]*fencedtype.Job, error) {
	var jobs []*fencedtype.Job
	gated, err := d.limited.Has(p.Queue), error(nil)
	if !gated {
		jobs, gated, err = d.claimJobs(ctx, p)
	}
	if err == nil && gated {
		jobs, err = d.claimLimitedJobs(ctx, p)
	}
	if err != nil {
		return nil, fmt.Errorf("claim from queue %q: %w", p.Queue, err)
	}
	return jobs, nil
}

// claimJobs runs claimJobsSQL, or claimLanes for a kind filter: the
// claimed jobs, or gated.
func (d *Driver) claimJobs(ctx context.Context, p driver.ClaimJobsParams) ([]*fencedtype.Job, bool, error) {
	if len(p.Kinds) > 0 {
		return d.claimLanes(ctx, p)
	}
	rows, err := d.pool.Query(ctx, claimJobsSQL, p.Queue, p.Owner, p.Limit, p.TTL.Microseconds())
	var gated bool
	s := newJobScanner(&gated)
	jobs, err := collectRows(rows, err, func(r pgx.CollectableRow) (*fencedtype.Job, error) { return s.scan(r) })
	return jobs, gated, err
}

// collectRows is pgx.CollectRows of a query's result, passing on the
// query's own error.
func collectRows[T any](rows pgx.Rows, err error, fn pgx.RowToFunc[T]) ([]T, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, fn)
}

// jobGuard is the condition every worker-owned write carries. Every
// statement that carries it names its jobs by id, and must read them
// through the primary key. The state it requires is a subquery, evaluated
// once per statement, so that the planner cannot match it to the partial
// index of running jobs (fenced_jobs_running, WHERE state = 'running'):
// between vacuums that index also holds an entry for every attempt ended
// since, and a batch read through it is many times slower (docs/design.md
// §10, measurements; TestBatchesOfAttemptsAreReadByTheirIDs).
const jobGuard = `j.state = (SELECT 'running') AND j.lease_expires_at > clock_timestamp()`

// retryDeadlock runs fn again when PostgreSQL aborted it as a deadlock
// victim (nothing it did was kept), a few times.
func retryDeadlock(ctx context.Context, fn func() error) error {
	for try := 1; ; try++ {
		err := fn()
		var pgErr *pgconn.PgError
		if try == 5 || !errors.As(err, &pgErr) || pgErr.Code != "40P01" || ctx.Err() != nil {
			return err
		}
	}
}

// reportProgressSQL stores a running attempt's progress and returns the
// clock reading it was stored at.
const reportProgressSQL = `UPDATE fenced_jobs j SET progress = $3, updated_at = clock_timestamp()
WHERE j.id = $1 AND j.fence = $2 AND ` + jobGuard + `
RETURNING j.updated_at`

// ReportProgress implements driver.JobDriver: one guarded statement; a
// refusal is diagnosed by a read after it.
func (d *Driver) ReportProgress(ctx context.Context, ref fencedtype.JobRef, progress []byte) (time.Time, error) {
	var at time.Time
	err := d.pool.QueryRow(ctx, reportProgressSQL, ref.ID, ref.Fence, string(progress)).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, d.diagnoseJob(ctx, ref)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("progress of job %d: %w", ref.ID, err)
	}
	return at, nil
}

// mergeMetadataSQL merges a JSON Merge Patch ($3) into a running attempt's
// metadata (none taken as {}), when the merged object prints in at most $4
// bytes, and returns it. A refusal is diagnosed by DiagnoseMerge.
const mergeMetadataSQL = `UPDATE fenced_jobs j
SET metadata = fenced_jsonb_merge_patch(COALESCE(j.metadata, '{}'), $3::jsonb), updated_at = clock_timestamp()
WHERE j.id = $1 AND j.fence = $2 AND ` + jobGuard + `
    AND octet_length(fenced_jsonb_merge_patch(COALESCE(j.metadata, '{}'), $3::jsonb)::text) <= $4
RETURNING j.metadata, j.updated_at`

// MergeJobMetadata implements driver.JobDriver: one guarded statement; a
// refusal is diagnosed by a read after it.
func (d *Driver) MergeJobMetadata(ctx context.Context, ref fencedtype.JobRef, patch []byte, maxBytes int) ([]byte, time.Time, error) {
	var merged []byte
	var at time.Time
	err := d.pool.QueryRow(ctx, mergeMetadataSQL, ref.ID, ref.Fence, string(patch), maxBytes).Scan(&merged, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		j, err := scanJob(d.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM fenced_jobs j WHERE j.id = $1`, ref.ID))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, time.Time{}, fencedtype.ErrNotFound
		}
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("read job %d: %w", ref.ID, err)
		}
		return nil, time.Time{}, driver.DiagnoseMerge(ref, j, maxBytes)
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("merge metadata of job %d: %w", ref.ID, notMigrated(err))
	}
	return merged, at, nil
}

func (d *Driver) diagnoseJob(ctx context.Context, ref fencedtype.JobRef) error {
	j, err := scanJob(d.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM fenced_jobs j WHERE j.id = $1`, ref.ID))
	if errors.Is(err, pgx.ErrNoRows) {
		return fencedtype.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("read job %d: %w", ref.ID, err)
	}
	return driver.DiagnoseJob(ref, j)
}

// jobGuardSQL share-locks the job row and says whether the attempt is
// current; like leaseGuardSQL it checks the version it locked, never an older
// one a caller's REPEATABLE READ snapshot still shows. Its fence check is
// guardFenceMatch (j.fence = $2, in fencecheck.go; dropped by the broken
// build, fencecheck_broken.go), beside jobGuard's state and expiry.
const jobGuardSQL = `SELECT (` + guardFenceMatch + ` AND ` + jobGuard + `) FROM fenced_jobs j WHERE j.id = $1 FOR SHARE`

// JobTx implements driver.JobDriver.
func (d *Driver) JobTx(ctx context.Context, ref fencedtype.JobRef, fn func(driver.Tx) error) error {
	err := d.pool.inTx(ctx, func(tx pgx.Tx) error {
		if err := guardJob(ctx, tx, ref); err != nil {
			return err
		}
		return fn(&Tx{tx: tx})
	})
	if errors.Is(err, errGuardFailed) {
		return d.diagnoseJob(ctx, ref)
	}
	return err
}

// GuardJob checks, inside the caller's own transaction, that ref is the
// job's current running attempt with an unexpired lease, and share-locks the
// job row until the transaction ends, so recovery and re-claims wait for it.
// It returns *fencedtype.StaleError or fencedtype.ErrNotFound when the check fails;
// the caller must then roll back.
func (d *Driver) GuardJob(ctx context.Context, tx pgx.Tx, ref fencedtype.JobRef) error {
	if err := guardJob(ctx, tx, ref); !errors.Is(err, errGuardFailed) {
		return err
	}
	return d.diagnoseJob(ctx, ref)
}

func guardJob(ctx context.Context, tx pgx.Tx, ref fencedtype.JobRef) error {
	var current bool
	err := tx.QueryRow(ctx, jobGuardSQL, ref.ID, ref.Fence).Scan(&current)
	if errors.Is(err, pgx.ErrNoRows) {
		return errGuardFailed
	}
	if err != nil {
		return fmt.Errorf("guard job %d: %w", ref.ID, err)
	}
	if !current {
		return errGuardFailed
	}
	return nil
}
