package pgdriver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
)

// recoverJobsSQL takes back running jobs whose lease expired by the database
// clock. The UPDATE re-checks state, the fence observed by the pick and the
// expiry, so it can never overwrite a job that finished or was re-claimed in
// between. A job asked to cancel ends cancelled; one out of attempts ends
// failed; the rest go back to queued after the backoff of their attempt
// (backoffUS). Parameters: $1 limit, $2 base_us, $3 max_us, $4 jitter, $5
// the sweep's floor (NULL for none): only leases that expired after it are
// read, a range of fenced_jobs_running that starts past the entries of the
// attempts ended since a pinned snapshot (recoverySweep). It returns the
// jobs taken back and the statement's start by the database clock, and the
// sequences whose running job it ended so that it no longer blocks them
// (cancelled, or failed with sequence_continue_on_failed): queues, keys,
// ids.
var recoverJobsSQL = `
WITH expired AS (
    SELECT id, fence FROM fenced_jobs
    WHERE state = 'running' AND lease_expires_at <= clock_timestamp()
        AND lease_expires_at > COALESCE($5::timestamptz, '-infinity')
    ORDER BY lease_expires_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
), j AS (
    UPDATE fenced_jobs j SET
        state = CASE WHEN j.cancel_requested THEN 'cancelled'
                     WHEN j.attempt >= j.max_attempts THEN 'failed' ELSE 'queued' END,
        finished_at = CASE WHEN j.cancel_requested OR j.attempt >= j.max_attempts THEN clock_timestamp() END,
        run_at = clock_timestamp() + ` + backoffUS("j.attempt", "$2", "$3", "$4") + ` * interval '1 microsecond',
        last_error = 'lease expired: worker ' || j.owner || ' stopped heartbeating',
        lease_expires_at = NULL,
        updated_at = clock_timestamp()
    FROM expired e
    WHERE j.id = e.id AND j.fence = e.fence AND j.state = 'running' AND j.lease_expires_at <= clock_timestamp()
    RETURNING j.id, j.attempt, j.fence, j.owner, j.attempted_at, j.last_error, j.queue,
        CASE WHEN j.state = 'cancelled' OR (j.state = 'failed' AND j.sequence_continue_on_failed)
            THEN j.sequence_key END AS released
), h AS (
    INSERT INTO fenced_job_attempts (job_id, attempt, fence, owner, started_at, ended_at, outcome, error)
    SELECT id, attempt, fence, owner, attempted_at, clock_timestamp(), 'lost', last_error FROM j
)
SELECT count(*), statement_timestamp(), COALESCE(array_agg(queue) FILTER (WHERE released IS NOT NULL), '{}'),
    COALESCE(array_agg(released) FILTER (WHERE released IS NOT NULL), '{}'),
    COALESCE(array_agg(id) FILTER (WHERE released IS NOT NULL), '{}')
FROM j`

// RecoverJobs implements driver.JobDriver. With a full sweep
// (recoverySweep), in the same transaction, it trims the lanes' marks
// (trimLaneMarksSQL), and then drops the lanes that are empty
// (dropEmptyLanes) and releases the sequences' heads left held
// (releaseStuck): the maintainer recovers every round, and a trim reads
// every mark, also those it deleted before while a snapshot is pinned.
func (d *Driver) RecoverJobs(ctx context.Context, guard *driver.LeaseRef, limit int, b fencedtype.Backoff) (int, error) {
	var n int
	floor, full := d.sweep.floor()
	var at time.Time
	var queues, keys []string
	var ids []int64
	err := d.maintenance(ctx, guard, func(tx pgx.Tx) error {
		if full {
			if _, err := tx.Exec(ctx, trimLaneMarksSQL); err != nil {
				return fmt.Errorf("trim the lanes' marks: %w", err)
			}
		}
		return tx.QueryRow(ctx, recoverJobsSQL, limit, b.Base.Microseconds(), b.Max.Microseconds(), b.Jitter, floor).
			Scan(&n, &at, &queues, &keys, &ids)
	})
	if err == nil {
		d.sweep.swept(at, full, n < limit)
		err = d.releaseSequences(ctx, releasesOf(queues, keys, ids))
	}
	if err == nil && full {
		if err := d.dropEmptyLanes(ctx); err != nil {
			return n, fmt.Errorf("drop empty lanes: %w", err)
		}
		if err := d.releaseStuck(ctx); err != nil {
			return n, fmt.Errorf("release held sequence heads: %w", err)
		}
	}
	if err != nil {
		return 0, fmt.Errorf("recover expired jobs: %w", err)
	}
	return n, nil
}

// recoverySweep paces RecoverJobs' reads of the expired leases. Between
// vacuums — and for as long as a snapshot is pinned — fenced_jobs_running
// keeps an entry for every attempt ended since, each with the lease it had
// then, all expired: a sweep of every lease up to now walks them all, and
// visits the heap for each. So a sweep reads only the leases that expired
// after a floor: sweepMargin before the start of the last sweep that took
// back everything it found. A lease the last sweep could not have seen is
// newer than that: written by a claim or heartbeat since, of now plus a
// TTL. Two kinds can hide below the floor: an attempt whose JobTx held its
// row (the sweep skips locked rows) and one whose claim committed more
// than sweepMargin after its lease expired; so every sweepFullEvery a
// sweep reads every lease, and such an attempt is taken back at most that
// much later than it would have been. The floor is this process's: a new
// maintainer starts with a full sweep.
type recoverySweep struct {
	mu       sync.Mutex
	last     time.Time // start of the last sweep that left nothing expired behind (by the database clock)
	lastFull time.Time // start of the last full sweep (local clock)
}

// The sweep's margin and the time between full sweeps (variables for a
// test).
var (
	sweepMargin    = time.Second
	sweepFullEvery = time.Minute
)

// floor is the next sweep's floor (nil: a full sweep), and whether it is
// full.
func (s *recoverySweep) floor() (*time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last.IsZero() || time.Since(s.lastFull) >= sweepFullEvery {
		return nil, true
	}
	f := s.last.Add(-sweepMargin)
	return &f, false
}

// swept records a sweep that started at at (the database clock); done
// tells that it took back fewer than its limit, so nothing it could read
// was left.
func (s *recoverySweep) swept(at time.Time, full, done bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if full {
		s.lastFull = time.Now()
	}
	if done {
		s.last = at
	}
}

// deleteFinishedJobsSQL deletes the oldest finished jobs. The outer WHERE
// repeats the condition: a DELETE that waited for a row lock re-checks only
// its own WHERE, and a job retried meanwhile is no longer finished. The pick
// is an ARRAY(...) so it runs once: as an IN subquery the planner may rescan
// it per row, and each rescan no longer sees the rows already deleted, so
// the LIMIT would slide and one call delete more than limit jobs. The
// pick's cutoff is a subquery, read once before the scan: compared with
// clock_timestamp() itself, a volatile function, finished_at could not bound
// a range of fenced_jobs_finished, and every call would read all finished
// jobs (docs/design.md §10, measurements).
//
// It returns how many jobs it deleted, and the failed jobs among them that
// blocked their sequences (queue, key, id), whose next jobs are released.
// A workflow's task is never deleted alone (finishedWorkflowsSQL).
var deleteFinishedJobsSQL = `
WITH d AS (
    DELETE FROM fenced_jobs j
    WHERE j.id = ANY(ARRAY(
        SELECT id FROM fenced_jobs
        WHERE finished_at < (SELECT clock_timestamp() - $1::bigint * interval '1 microsecond')
            AND workflow_id IS NULL
        ORDER BY finished_at LIMIT $2
        FOR UPDATE SKIP LOCKED))
    AND j.state IN ('succeeded', 'failed', 'cancelled')
    AND j.finished_at < clock_timestamp() - $1::bigint * interval '1 microsecond'
    RETURNING j.id, j.queue, CASE WHEN ` + blockingSQL + ` THEN j.sequence_key END AS blocked
)
SELECT count(*), COALESCE(array_agg(queue) FILTER (WHERE blocked IS NOT NULL), '{}'),
    COALESCE(array_agg(blocked) FILTER (WHERE blocked IS NOT NULL), '{}'),
    COALESCE(array_agg(id) FILTER (WHERE blocked IS NOT NULL), '{}')
FROM d`

// finishedWorkflowsSQL picks, and locks, up to $2 workflows whose every
// task finished more than $1 µs ago: retention deletes them whole
// (deleteWorkflowsSQL).
const finishedWorkflowsSQL = `
SELECT COALESCE(array_agg(id), '{}') FROM (
    SELECT w.id FROM fenced_workflows w
    WHERE w.created_at < (SELECT clock_timestamp() - $1::bigint * interval '1 microsecond')
        AND NOT EXISTS (SELECT 1 FROM fenced_jobs j WHERE j.workflow_id = w.id
            AND (j.finished_at IS NULL OR j.finished_at >= (SELECT clock_timestamp() - $1::bigint * interval '1 microsecond')))
    ORDER BY w.id LIMIT $2
    FOR UPDATE SKIP LOCKED) x`

// DeleteFinishedJobs implements driver.JobDriver: up to limit finished jobs
// that are no workflow's tasks, and up to limit workflows whose every task
// finished before age, whole (their tasks count in the number it returns).
// Once its transaction committed, it releases the sequences that a deleted
// job blocked.
func (d *Driver) DeleteFinishedJobs(ctx context.Context, guard *driver.LeaseRef, age time.Duration, limit int) (int, error) {
	var n int64
	var queues, keys []string
	var ids []int64
	err := d.maintenance(ctx, guard, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, deleteFinishedJobsSQL, age.Microseconds(), limit).Scan(&n, &queues, &keys, &ids); err != nil {
			return err
		}
		var workflows []int64
		if err := tx.QueryRow(ctx, finishedWorkflowsSQL, age.Microseconds(), limit).Scan(&workflows); err != nil || len(workflows) == 0 {
			return err
		}
		var tasks int64
		err := tx.QueryRow(ctx, deleteWorkflowsSQL, workflows).Scan(&tasks)
		n += tasks
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete finished jobs: %w", err)
	}
	if err := d.releaseSequences(ctx, releasesOf(queues, keys, ids)); err != nil {
		return int(n), fmt.Errorf("delete finished jobs: release their sequences: %w", err)
	}
	return int(n), nil
}

// maintenance runs fn in a transaction, first guarded by the maintenance
// lease when one is given: a maintainer that lost its lease commits nothing.
func (d *Driver) maintenance(ctx context.Context, guard *driver.LeaseRef, fn func(pgx.Tx) error) error {
	if guard == nil {
		return d.pool.inTx(ctx, fn)
	}
	return d.LeaseTx(ctx, *guard, func(tx driver.Tx) error {
		ptx, err := pgxOf(tx)
		if err != nil {
			return err
		}
		return fn(ptx)
	})
}
