package pgdriver

import (
	"context"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
)

// claimLimitedPickSQL picks and locks the candidates of a limited claim:
// eligible queued jobs in claim order whose key is not full and whose
// sequence is not blocked by the snapshot of this statement
// (driver.JobClaimableSQL), skipping rows other claimers hold. %s is the
// kind filter ($3). Parameters: $1 queue, $2 window.
const claimLimitedPickSQL = `
SELECT j.id, j.kind, COALESCE(j.concurrency_key, ''), COALESCE(j.sequence_key, '') FROM fenced_jobs j
WHERE j.state = 'queued' AND j.queue = $1 AND j.run_at <= clock_timestamp()%s
    AND %s
ORDER BY j.priority, j.run_at, j.id
LIMIT $2
FOR UPDATE OF j SKIP LOCKED`

// The limited pick of each kind filter.
var (
	claimLimitedPickAnyKindSQL = fmt.Sprintf(claimLimitedPickSQL, "", driver.JobClaimableSQL)
	claimLimitedPickOneKindSQL = fmt.Sprintf(claimLimitedPickSQL, " AND j.kind = $3", driver.JobClaimableSQL)
	claimLimitedPickOfKindsSQL = fmt.Sprintf(claimLimitedPickSQL, " AND j.kind = ANY($3::text[])", driver.JobClaimableSQL)
)

// claimLimitLocksSQL takes the transaction-scoped advisory locks of a
// limited claim, in the order of the array ($1, sorted by the caller): the
// function scan returns the elements in array order and the aggregate
// takes each as it comes. Held until the transaction ends.
const claimLimitLocksSQL = `SELECT count(pg_advisory_xact_lock(k)) FROM unnest($1::bigint[]) AS k`

// claimLimitLoadSQL reads the locked candidates ($1) afresh, after the
// locks: each one's key limit, its key's running attempts and whether its
// sequence is blocked, in claim order.
var claimLimitLoadSQL = `SELECT ` + driver.JobClaimLoadColumns + `
FROM fenced_jobs j WHERE j.id = ANY($1) AND j.state = 'queued'
ORDER BY j.priority, j.run_at, j.id`

// claimLimitedStartSQL starts the admitted candidates, rows the claim holds
// locked. Parameters: $1 queue, $2 owner, $3 the ids, $4 ttl_us (as
// jobStartSet numbers them).
const claimLimitedStartSQL = `
UPDATE fenced_jobs j SET ` + jobStartSet + `
WHERE j.id = ANY($3::bigint[]) AND j.queue = $1 AND j.state = 'queued'
RETURNING ` + jobColumns

// claimLimitedJobs is the claim of a queue gated by keys or limits (see
// driver/claimlimits.go): one READ COMMITTED transaction that picks and
// locks candidates, takes the advisory locks of their keys in order, reads
// their load in a new statement (a snapshot taken after the locks, so it
// sees every attempt a claimer that held them before committed), admits
// and starts. A deadlock (possible only with another user of advisory locks
// whose id collides) is retried.
func (d *Driver) claimLimitedJobs(ctx context.Context, p driver.ClaimJobsParams) ([]*fencedtype.Job, error) {
	pick, args := claimLimitedPickAnyKindSQL, []any{p.Queue, driver.ClaimWindow(p.Limit)}
	switch len(p.Kinds) {
	case 0:
	case 1:
		pick, args = claimLimitedPickOneKindSQL, append(args, p.Kinds[0])
	default:
		pick, args = claimLimitedPickOfKindsSQL, append(args, p.Kinds)
	}
	var jobs []*fencedtype.Job
	err := retryDeadlock(ctx, func() error {
		jobs = nil
		tx, err := d.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
		if err != nil {
			return err
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
		rows, err := tx.Query(ctx, pick, args...)
		cands, err := collectRows(rows, err, func(r pgx.CollectableRow) (driver.ClaimCandidate, error) {
			var c driver.ClaimCandidate
			return c, r.Scan(&c.ID, &c.Kind, &c.ConcurrencyKey, &c.SequenceKey)
		})
		if err != nil || len(cands) == 0 {
			return err
		}
		var load driver.ClaimLoad
		if err := readClaimGlobals(ctx, tx, p.Queue, &load, false); err != nil {
			return err
		}
		locks := driver.LimitLockIDs(driver.LimitLockNames(p.Queue, cands, load.HasGlobal()))
		if len(locks) > 0 {
			if _, err := tx.Exec(ctx, claimLimitLocksSQL, locks); err != nil {
				return err
			}
		}
		ids := make([]int64, len(cands))
		for i, c := range cands {
			ids[i] = c.ID
		}
		rows, err = tx.Query(ctx, claimLimitLoadSQL, ids)
		cands, err = collectRows(rows, err, func(r pgx.CollectableRow) (driver.ClaimCandidate, error) {
			return driver.ScanClaimCandidate(r)
		})
		if err != nil {
			return err
		}
		if load.HasGlobal() {
			if err := readClaimGlobals(ctx, tx, p.Queue, &load, true); err != nil {
				return err
			}
		}
		admitted := driver.AdmitClaims(cands, load, p.Limit)
		if len(admitted) == 0 {
			return tx.Commit(ctx)
		}
		if jobs, err = collectJobs(tx.Query(ctx, claimLimitedStartSQL, p.Queue, p.Owner, admitted, p.TTL.Microseconds())); err != nil {
			return err
		}
		if len(jobs) != len(admitted) {
			return fmt.Errorf("started %d of %d admitted jobs", len(jobs), len(admitted))
		}
		if err := tx.Commit(ctx); err != nil {
			return unknownOutcome(err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	driver.SortClaimed(jobs)
	return jobs, nil
}

// readClaimGlobals reads the queue's global limits into load, or, with
// running, the queue's running jobs by kind.
func readClaimGlobals(ctx context.Context, tx pgx.Tx, queue string, load *driver.ClaimLoad, running bool) error {
	query := driver.JobGlobalLimitsSQL
	add := load.AddGlobal
	if running {
		query, add = driver.JobRunningByKindSQL, load.AddRunning
	}
	rows, err := tx.Query(ctx, query, queue)
	if err != nil {
		return err
	}
	var kind string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&kind, &n}, func() error { add(kind, n); return nil })
	return err
}

// setJobLimitSQL stores a limit, replacing the one of its scope.
const setJobLimitSQL = `
INSERT INTO fenced_job_limits AS l (queue, kind, concurrency_key, per_key_limit, global_limit, updated_at)
VALUES ($1, $2, $3, $4, $5, clock_timestamp())
ON CONFLICT (queue, kind, concurrency_key) DO UPDATE SET
    per_key_limit = EXCLUDED.per_key_limit, global_limit = EXCLUDED.global_limit, updated_at = EXCLUDED.updated_at
RETURNING l.queue, l.kind, l.concurrency_key, l.per_key_limit, l.global_limit`

// SetJobLimit implements driver.JobDriver.
func (d *Driver) SetJobLimit(ctx context.Context, l fencedtype.JobLimit) (*fencedtype.JobLimit, error) {
	var out fencedtype.JobLimit
	err := d.pool.QueryRow(ctx, setJobLimitSQL, l.Queue, l.Kind, l.ConcurrencyKey, l.PerKey, l.Global).
		Scan(&out.Queue, &out.Kind, &out.ConcurrencyKey, &out.PerKey, &out.Global)
	if err != nil {
		return nil, fmt.Errorf("set job limit: %w", err)
	}
	return &out, nil
}

// deleteJobLimitSQL deletes the limit of one scope.
const deleteJobLimitSQL = `DELETE FROM fenced_job_limits WHERE queue = $1 AND kind = $2 AND concurrency_key = $3`

// DeleteJobLimit implements driver.JobDriver.
func (d *Driver) DeleteJobLimit(ctx context.Context, queue, kind, key string) error {
	tag, err := d.pool.Exec(ctx, deleteJobLimitSQL, queue, kind, key)
	if err != nil {
		return fmt.Errorf("delete job limit: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fencedtype.ErrNotFound
	}
	return nil
}

// listJobLimitsSQL lists the limits of queue $1, every queue when empty.
const listJobLimitsSQL = `
SELECT queue, kind, concurrency_key, per_key_limit, global_limit FROM fenced_job_limits
WHERE $1 = '' OR queue = $1
ORDER BY queue, kind, concurrency_key`

// ListJobLimits implements driver.JobDriver.
func (d *Driver) ListJobLimits(ctx context.Context, queue string) ([]fencedtype.JobLimit, error) {
	rows, err := d.pool.Query(ctx, listJobLimitsSQL, queue)
	out, err := collectRows(rows, err, func(r pgx.CollectableRow) (fencedtype.JobLimit, error) {
		var l fencedtype.JobLimit
		return l, r.Scan(&l.Queue, &l.Kind, &l.ConcurrencyKey, &l.PerKey, &l.Global)
	})
	if err != nil {
		return nil, fmt.Errorf("list job limits: %w", err)
	}
	return out, nil
}
