package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// recoverJobsSQL takes back running jobs whose lease expired by the database
// clock. The outer condition re-checks state and expiry on the very rows it
// updates (with one writer nothing can change between pick and update, but
// the statement says what it relies on). A job asked to cancel ends
// cancelled; one out of attempts ends failed; the rest go back to queued
// after the backoff of their attempt (backoffUS). Parameters: ?1 limit,
// ?2 base_us, ?3 max_us, ?4 jitter.
var recoverJobsSQL = `
UPDATE fenced_jobs SET
    state = CASE WHEN cancel_requested THEN 'cancelled'
                 WHEN attempt >= max_attempts THEN 'failed' ELSE 'queued' END,
    finished_us = CASE WHEN cancel_requested OR attempt >= max_attempts THEN ` + nowUS + ` END,
    run_at_us = ` + nowUS + ` + ` + backoffUS("attempt", "?2", "?3", "?4") + `,
    last_error = 'lease expired: worker ' || owner || ' stopped heartbeating',
    lease_expires_us = NULL,
    updated_us = ` + nowUS + `
WHERE id IN (
    SELECT id FROM fenced_jobs
    WHERE state = 'running' AND lease_expires_us <= ` + nowUS + `
    ORDER BY lease_expires_us
    LIMIT ?1)
  AND state = 'running' AND lease_expires_us <= ` + nowUS + `
RETURNING id, last_error`

// lost is an attempt recoverJobsSQL took back: the job and the error it
// recorded.
type lost struct {
	id  int64
	msg string
}

func scanLost(row sqldb.Scanner) (lost, error) {
	var l lost
	err := row.Scan(&l.id, &l.msg)
	return l, err
}

// RecoverJobs implements driver.JobDriver: the take-back and the history rows
// of the lost attempts commit together.
func (d *Driver) RecoverJobs(ctx context.Context, guard *driver.LeaseRef, limit int, b fencedtype.Backoff) (int, error) {
	var n int
	err := d.maintenance(ctx, guard, func(tx *sql.Tx) error {
		taken, err := sqldb.All(ctx, tx, scanLost, recoverJobsSQL, limit, b.Base.Microseconds(), b.Max.Microseconds(), b.Jitter)
		if err != nil {
			return err
		}
		record, err := tx.PrepareContext(ctx, jobAttemptSQL)
		if err != nil {
			return err
		}
		defer record.Close()
		for _, l := range taken {
			if _, err := record.ExecContext(ctx, l.id, fencedtype.OutcomeLost, l.msg); err != nil {
				return fmt.Errorf("job %d history: %w", l.id, err)
			}
		}
		n = len(taken)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("recover expired jobs: %w", err)
	}
	return n, nil
}

const deleteFinishedJobsSQL = `
DELETE FROM fenced_jobs WHERE id IN (
    SELECT id FROM fenced_jobs
    WHERE finished_us < ` + nowUS + ` - ?1
    ORDER BY finished_us LIMIT ?2)
AND state IN ('succeeded', 'failed', 'cancelled')`

// DeleteFinishedJobs implements driver.JobDriver. Attempt history goes with
// its job (ON DELETE CASCADE); the count is of jobs.
func (d *Driver) DeleteFinishedJobs(ctx context.Context, guard *driver.LeaseRef, age time.Duration, limit int) (int, error) {
	var n int64
	err := d.maintenance(ctx, guard, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, deleteFinishedJobsSQL, age.Microseconds(), limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete finished jobs: %w", err)
	}
	return int(n), nil
}

// maintenance runs fn in a write transaction whose first statement, when a
// guard is given, checks the maintenance lease: a maintainer that lost its
// lease commits nothing.
func (d *Driver) maintenance(ctx context.Context, guard *driver.LeaseRef, fn func(*sql.Tx) error) error {
	return d.writeTx(ctx, func(tx *sql.Tx) error {
		if guard != nil {
			if err := d.GuardLease(ctx, tx, *guard); err != nil {
				return err
			}
		}
		return fn(tx)
	})
}
