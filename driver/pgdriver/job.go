package pgdriver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
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
	clock_timestamp()`

func scanJob(row pgx.Row) (*fencedtype.Job, error) {
	return newJobScanner().scan(row)
}

// jobScanner scans rows of jobColumns, followed by extra columns, into new
// Jobs. Its destinations are one slice for every row it scans: a claim of a
// batch allocates the jobs, not a slice of destinations per job. Make it
// with newJobScanner.
type jobScanner struct {
	dest  []any
	state string
}

// newJobScanner scans jobColumns, then the extra destinations given.
func newJobScanner(extra ...any) *jobScanner {
	return &jobScanner{dest: append(make([]any, jobColumnCount, jobColumnCount+len(extra)), extra...)}
}

// jobColumnCount is the number of jobColumns.
const jobColumnCount = 25

func (s *jobScanner) scan(row pgx.Row) (*fencedtype.Job, error) {
	j := new(fencedtype.Job)
	d := s.dest
	d[0], d[1], d[2], d[3], d[4], d[5] = &j.ID, &j.Kind, &j.Queue, (*[]byte)(&j.Args), &j.Priority, &s.state
	d[6], d[7], d[8], d[9], d[10], d[11] = &j.Attempt, &j.MaxAttempts, &j.Fence, &j.Owner, &j.RunAt, &j.LeaseExpiresAt
	d[12], d[13], d[14], d[15], d[16] = &j.CancelRequested, (*[]byte)(&j.Output), &j.LastError, (*[]byte)(&j.Progress), &j.IdempotencyKey
	d[17], d[18], d[19], d[20], d[21] = &j.CreatedAt, &j.AttemptedAt, &j.FinishedAt, &j.ConcurrencyKey, &j.SequenceKey
	d[22], d[23], d[24] = &j.SequenceContinueOnFailed, (*[]byte)(&j.Metadata), &j.DecidedAt
	err := row.Scan(d...)
	j.State = fencedtype.JobState(s.state)
	return j, err
}

func collectJobs(rows pgx.Rows, err error) ([]*fencedtype.Job, error) {
	s := newJobScanner()
	return collectRows(rows, err, func(r pgx.CollectableRow) (*fencedtype.Job, error) { return s.scan(r) })
}

// claimJobsSQL picks eligible jobs in priority order, skipping rows other
// claimers have locked, and starts a new attempt on each: state running,
// fence and attempt bumped, lease from the database clock. %s is the kind
// filter: none, one kind ($5: the claim_kind index serves it in claim
// order), or several ($5 an array: the claim index is walked in claim order
// and other kinds are skipped).
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
    WHERE state = 'queued' AND queue = $1 AND run_at <= clock_timestamp()%s
        AND ` + queueNotPausedPG + `
    ORDER BY priority, run_at, id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), gated AS (
    SELECT EXISTS (SELECT 1 FROM picked WHERE keyed)
        OR EXISTS (SELECT 1 FROM fenced_job_limits WHERE queue = $1 AND global_limit > 0) AS yes
), claimed AS (
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

// The claim statement of each kind filter.
var (
	claimJobsAnyKindSQL = fmt.Sprintf(claimJobsSQL, "")
	claimJobsOneKindSQL = fmt.Sprintf(claimJobsSQL, " AND kind = $5")
	claimJobsOfKindsSQL = fmt.Sprintf(claimJobsSQL, " AND kind = ANY($5::text[])")
)

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

// claimJobs runs claimJobsSQL: the claimed jobs, or gated.
func (d *Driver) claimJobs(ctx context.Context, p driver.ClaimJobsParams) ([]*fencedtype.Job, bool, error) {
	args := []any{p.Queue, p.Owner, p.Limit, p.TTL.Microseconds()}
	query := claimJobsAnyKindSQL
	switch len(p.Kinds) {
	case 0:
	case 1:
		query, args = claimJobsOneKindSQL, append(args, p.Kinds[0])
	default:
		query, args = claimJobsOfKindsSQL, append(args, p.Kinds)
	}
	rows, err := d.pool.Query(ctx, query, args...)
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
// with statistics taken when few jobs ran, it estimated that index at a
// handful of rows and read a batch of ends or heartbeats through it, but
// between vacuums the index also holds an entry for every attempt ended
// since. At 25,000 jobs a second such a batch then took 300-800 ms instead
// of 10, and a continuous run fell to a tenth of its pace for minutes,
// until the statistics changed again. Other ways of hiding the state test
// did worse: "(j.state = 'running') IS TRUE" estimates one row from stale
// statistics and has the whole table scanned, and adding an index condition
// on the ids (j.id = ANY($1)) had the batch's ids looked up again for each
// row of the batch.
const jobGuard = `j.state = (SELECT 'running') AND j.lease_expires_at > clock_timestamp()`

// heartbeatJobsSQL extends the leases of the attempts given. Rows are locked
// in id order (as endJobsSQL locks them), so a heartbeat and a batch of
// outcomes never deadlock; a row held by an open JobTx of its attempt is
// skipped rather than waited for, so one long transaction cannot stall the
// heartbeat of every other job.
const heartbeatJobsSQL = `
WITH locked AS (
    SELECT j.id FROM fenced_jobs j
    JOIN unnest($1::bigint[], $2::bigint[]) AS h(id, fence) ON j.id = h.id AND j.fence = h.fence
    WHERE ` + jobGuard + `
    ORDER BY j.id
    FOR NO KEY UPDATE OF j SKIP LOCKED
)
UPDATE fenced_jobs j SET lease_expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond'
FROM locked WHERE j.id = locked.id AND ` + jobGuard + `
RETURNING j.id, j.cancel_requested, j.lease_expires_at`

// jobCurrentSQL finds which of the attempts given are still current.
const jobCurrentSQL = `SELECT j.id FROM fenced_jobs j
JOIN unnest($1::bigint[], $2::bigint[]) AS h(id, fence) ON j.id = h.id AND j.fence = h.fence
WHERE ` + jobGuard

// HeartbeatJobs implements driver.JobDriver. Ids must be distinct. A job
// not extended is Lost unless a read shows its attempt still current (its
// row was held by a transaction of that attempt): then it is Busy.
func (d *Driver) HeartbeatJobs(ctx context.Context, refs []fencedtype.JobRef, ttl time.Duration) (*fencedtype.HeartbeatResult, error) {
	refs = slices.Clone(refs)
	slices.SortFunc(refs, func(a, b fencedtype.JobRef) int { return cmp.Compare(a.ID, b.ID) })
	ids, fences := splitRefs(refs)
	res := &fencedtype.HeartbeatResult{}
	err := retryDeadlock(ctx, func() error {
		*res = fencedtype.HeartbeatResult{}
		rows, err := d.pool.Query(ctx, heartbeatJobsSQL, ids, fences, ttl.Microseconds())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var cancel bool
			if err := rows.Scan(&id, &cancel, &res.ExpiresAt); err != nil {
				return err
			}
			res.Extended = append(res.Extended, id)
			if cancel {
				res.CancelRequested = append(res.CancelRequested, id)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("heartbeat: %w", err)
	}
	err = driver.SplitUnextended(res, refs, func(missing []fencedtype.JobRef) ([]int64, error) {
		ids, fences := splitRefs(missing)
		rows, err := d.pool.Query(ctx, jobCurrentSQL, ids, fences)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowTo[int64])
	})
	if err != nil {
		return nil, fmt.Errorf("heartbeat: %w", err)
	}
	return res, nil
}

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

func splitRefs(refs []fencedtype.JobRef) (ids, fences []int64) {
	ids, fences = make([]int64, len(refs)), make([]int64, len(refs))
	for i, r := range refs {
		ids[i], fences[i] = r.ID, r.Fence
	}
	return ids, fences
}

// endJobsSQL ends attempts, each guarded by its own fence, and records each
// ended attempt in the history, all in one statement, except a completed
// one: the row it leaves succeeded holds that attempt (driver.WithRowAttempts). A failure retries
// (queued, run_at = now + delay) unless attempts are exhausted or it is
// discarded; a failure given a backoff (base_us not NULL) waits the backoff
// of its attempt (backoffUS) instead of delay_us. A snooze does not count
// against max_attempts. A job asked to cancel that fails or snoozes ends
// cancelled: the request is never lost. A completion clears the job's last error (the history keeps each
// attempt's). Each written end is reported with its position in the batch
// (ord): when two ends name one attempt, only the one the row was updated
// with is.
//
// The statement reads the clock once (n, a CTE: evaluated once) and
// records every end it writes at that reading: updated_at, finished_at,
// the history's ended_at and the base of run_at, which it reports. Each
// row's guard reads the clock itself (clock_timestamp() in jobGuard).
//
// The fence check is endFenceMatch (j.fence = e.fence: the row's fence is
// the attempt's) and the reported fence endReportedFence (the row's fence),
// constants in fencecheck.go so that the chaos suite's deliberately broken
// build (fencecheck_broken.go) can drop them; jobGuard adds state running
// and an unexpired lease by clock_timestamp().
var endJobsSQL = `
WITH n AS (
    SELECT clock_timestamp() AS at
), e AS (
    SELECT u.*, n.at
    FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::jsonb[], $5::text[], $6::bigint[], $7::bool[],
            $8::bigint[], $9::bigint[], $10::float8[])
        WITH ORDINALITY AS u(id, fence, kind, output, error, delay_us, discard, base_us, max_us, jitter, ord), n
), j AS (
    UPDATE fenced_jobs j SET
        state = CASE
            WHEN e.kind = 'complete' THEN 'succeeded'
            WHEN e.kind = 'cancel' OR j.cancel_requested THEN 'cancelled'
            WHEN e.kind = 'snooze' THEN 'queued'
            WHEN e.discard OR j.attempt >= j.max_attempts THEN 'failed'
            ELSE 'queued' END,
        finished_at = CASE
            WHEN e.kind IN ('complete', 'cancel') OR j.cancel_requested
                OR (e.kind = 'fail' AND (e.discard OR j.attempt >= j.max_attempts))
            THEN e.at END,
        output = CASE WHEN e.kind = 'complete' THEN e.output ELSE j.output END,
        last_error = CASE WHEN e.kind IN ('fail', 'cancel') THEN e.error WHEN e.kind = 'complete' THEN NULL
            ELSE j.last_error END,
        run_at = CASE WHEN e.kind IN ('fail', 'snooze') THEN e.at + interval '1 microsecond' * CASE
                WHEN e.base_us IS NULL THEN e.delay_us
                ELSE ` + backoffUS("j.attempt", "e.base_us", "e.max_us", "e.jitter") + ` END
            ELSE j.run_at END,
        max_attempts = CASE WHEN e.kind = 'snooze' THEN j.max_attempts + 1 ELSE j.max_attempts END,
        lease_expires_at = NULL,
        updated_at = e.at
    FROM e
    WHERE j.id = e.id AND ` + endFenceMatch + ` AND ` + jobGuard + `
    RETURNING j.id, j.attempt, j.fence, j.owner, j.attempted_at, j.state, e.kind, e.error, e.fence AS ended_fence, e.ord, e.at
), h AS (
    INSERT INTO fenced_job_attempts (job_id, attempt, fence, owner, started_at, ended_at, outcome, error)
    SELECT id, attempt, fence, owner, attempted_at, at,
        CASE WHEN kind = 'complete' THEN 'succeeded' WHEN state = 'cancelled' THEN 'cancelled'
             WHEN kind = 'snooze' THEN 'snoozed' WHEN state = 'failed' THEN 'failed' ELSE 'retry' END,
        NULLIF(error, '')
    FROM j WHERE kind <> 'complete'
)
SELECT id, ` + endReportedFence + `, ord, at FROM j`

// endCompletesSQL is endJobsSQL for a batch of completions only, the
// common case: the same guard, clock reading and report, without the
// columns, cases and history a completion does not need (in a
// 200,000-job burn-down, pg_stat_statements: 16.0 µs a job against the
// general statement's 17.9-20.2).
var endCompletesSQL = `
WITH n AS (
    SELECT clock_timestamp() AS at
), e AS (
    SELECT u.*, n.at
    FROM unnest($1::bigint[], $2::bigint[], $3::jsonb[]) WITH ORDINALITY AS u(id, fence, output, ord), n
), j AS (
    UPDATE fenced_jobs j SET
        state = 'succeeded', finished_at = e.at, output = e.output, last_error = NULL,
        lease_expires_at = NULL, updated_at = e.at
    FROM e
    WHERE j.id = e.id AND ` + endFenceMatch + ` AND ` + jobGuard + `
    RETURNING j.id, j.fence, e.fence AS ended_fence, e.ord, e.at
)
SELECT id, ` + endReportedFence + `, ord, at FROM j`

// EndJobs implements driver.JobDriver: one statement ends the batch; an
// end it did not write is diagnosed after it, a replay of how its attempt
// ended included (diagnoseEnds).
func (d *Driver) EndJobs(ctx context.Context, tx driver.Tx, ends []fencedtype.JobEnd) ([]error, []fencedtype.JobEnded, error) {
	// Rows are locked in id order, as the heartbeat locks them: no deadlock.
	// order[k] is the end sent k-th; the statement reports each end it wrote
	// by that position, so two ends of one attempt are never both reported
	// written when only one could be.
	n := len(ends)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ends[a].Ref.ID, ends[b].Ref.ID) })
	ids, fences, kinds := make([]int64, n), make([]int64, n), make([]string, n)
	outputs, errs, delays, discards := make([]*string, n), make([]string, n), make([]int64, n), make([]bool, n)
	bases, maxes, jitters := make([]*int64, n), make([]int64, n), make([]float64, n)
	complete := true
	for i, at := range order {
		e := ends[at]
		complete = complete && e.Kind == fencedtype.EndComplete
		ids[i], fences[i], kinds[i] = e.Ref.ID, e.Ref.Fence, string(e.Kind)
		if e.Output != nil {
			s := string(e.Output)
			outputs[i] = &s
		}
		errs[i], delays[i], discards[i] = e.Error, e.Delay.Microseconds(), e.Discard
		if b := e.Backoff; b != nil {
			base := b.Base.Microseconds()
			bases[i], maxes[i], jitters[i] = &base, b.Max.Microseconds(), b.Jitter
		}
	}
	var q querier = d.pool
	if tx != nil {
		ptx, err := pgxOf(tx)
		if err != nil {
			return nil, nil, err
		}
		q = ptx
	}
	written := make([]bool, n)
	answers := make([]fencedtype.JobEnded, n)
	run := func() error {
		clear(written)
		clear(answers)
		var rows pgx.Rows
		var err error
		if complete {
			rows, err = q.Query(ctx, endCompletesSQL, ids, fences, outputs)
		} else {
			rows, err = q.Query(ctx, endJobsSQL, ids, fences, kinds, outputs, errs, delays, discards, bases, maxes, jitters)
		}
		if err != nil {
			return err
		}
		var ref fencedtype.JobRef
		var ord int
		var at time.Time
		_, err = pgx.ForEachRow(rows, []any{&ref.ID, &ref.Fence, &ord, &at}, func() error {
			if ord < 1 || ord > n {
				return fmt.Errorf("finish reported end %d of %d", ord, n)
			}
			if i := order[ord-1]; ends[i].Ref == ref {
				written[i] = true
				answers[i] = fencedtype.JobEnded{At: at}
			}
			return nil
		})
		return err
	}
	var err error
	if tx != nil {
		err = run() // a deadlock aborts the caller's transaction: not ours to retry
	} else {
		err = retryDeadlock(ctx, run)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("end jobs: %w", err)
	}
	out, err := diagnoseEnds(ctx, q, ends, written, answers, tx != nil)
	if err != nil {
		return nil, nil, err
	}
	return out, answers, nil
}

// endedAttemptsSQL reads the history entries of attempts by (job, fence):
// $1 the jobs' ids, $2 the fences.
const endedAttemptsSQL = `SELECT h.job_id, h.attempt, h.fence, h.owner, h.started_at, h.ended_at, h.outcome, COALESCE(h.error, '')
FROM unnest($1::bigint[], $2::bigint[]) AS u(id, fence)
JOIN fenced_job_attempts h ON h.job_id = u.id AND h.fence = u.fence`

// diagnoseEnds answers each end that did not take effect (driver.DiagnoseEnd):
// a replay of how its attempt ended, into answers, or its typed error,
// from the job rows and the attempts' history entries read through q (the
// caller's transaction when there is one). In the caller's transaction the
// job rows are share-locked first: a REPEATABLE READ or SERIALIZABLE
// snapshot may predate a heartbeat, a new claim or another end of the
// attempt (the finish then matched nothing in the snapshot), and a locking
// read of a row changed since fails with a serialization error the caller
// can retry, instead of diagnosing the old version. Without one, the reads
// come after the ending statement, which waited for any other end of the
// same attempt in flight: the end it did not write is settled (see
// driver.DiagnoseEnd), and the reads see how.
func diagnoseEnds(ctx context.Context, q querier, ends []fencedtype.JobEnd, ok []bool, answers []fencedtype.JobEnded, lock bool) ([]error, error) {
	out := make([]error, len(ends))
	var missing, ids, fences []int64
	for i, e := range ends {
		if ok[i] {
			continue
		}
		missing = append(missing, e.Ref.ID)
		if e.Kind != fencedtype.EndComplete { // a completed attempt stays on its job's row
			ids, fences = append(ids, e.Ref.ID), append(fences, e.Ref.Fence)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	read := `SELECT ` + jobColumns + ` FROM fenced_jobs j WHERE j.id = ANY($1)`
	if lock {
		read += ` ORDER BY j.id FOR SHARE`
	}
	cur, err := collectJobs(q.Query(ctx, read, missing))
	if err != nil {
		return nil, fmt.Errorf("diagnose jobs: %w", err)
	}
	byID := make(map[int64]*fencedtype.Job, len(cur))
	for _, j := range cur {
		byID[j.ID] = j
	}
	attempts := make(map[fencedtype.JobRef]*fencedtype.JobAttempt, len(ids))
	if len(ids) > 0 {
		rows, err := q.Query(ctx, endedAttemptsSQL, ids, fences)
		if err != nil {
			return nil, fmt.Errorf("diagnose jobs: %w", err)
		}
		var id int64
		var a fencedtype.JobAttempt
		_, err = pgx.ForEachRow(rows, []any{&id, &a.Attempt, &a.Fence, &a.Owner, &a.StartedAt, &a.EndedAt, &a.Outcome, &a.Error}, func() error {
			got := a
			if a.EndedAt != nil { // a copy: the next row is scanned into a
				t := *a.EndedAt
				got.EndedAt = &t
			}
			attempts[fencedtype.JobRef{ID: id, Fence: a.Fence}] = &got
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("diagnose jobs: %w", err)
		}
	}
	for i, e := range ends {
		if !ok[i] {
			answers[i], out[i] = driver.DiagnoseEnd(e, byID[e.Ref.ID], attempts[e.Ref])
		}
	}
	return out, nil
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
