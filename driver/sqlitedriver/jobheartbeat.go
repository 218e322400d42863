package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// heartbeatJobsSQL extends one attempt's lease if it is current and
// returns whether a cancel was asked and the new expiry.
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

// HeartbeatJob implements driver.JobDriver: heartbeatJobsSQL for one
// attempt and, when it extended nothing, the diagnosis, in one write
// transaction. SQLite has one writer: the statement waits for the write
// lock (held by an open JobTx too), so an attempt that is current is
// always extended, never answered as it stands.
func (d *Driver) HeartbeatJob(ctx context.Context, ref fencedtype.JobRef, ttl time.Duration) (*fencedtype.JobHeartbeat, error) {
	var hb *fencedtype.JobHeartbeat
	var refused error
	us := ttl.Microseconds()
	err := d.writeTx(ctx, func(tx *sql.Tx) error {
		hb, refused = nil, nil
		var cancel bool
		var expires int64
		err := tx.QueryRowContext(ctx, heartbeatJobsSQL, ref.ID, ref.Fence, us).Scan(&cancel, &expires)
		if err == nil {
			hb = &fencedtype.JobHeartbeat{ExpiresAt: usTime(expires), CancelRequested: cancel, Extended: true,
				DecidedAt: usTime(expires - us)}
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if refused = diagnoseJob(ctx, tx, ref); !isDiagnosis(refused) {
			return refused
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("heartbeat of job %d: %w", ref.ID, err)
	}
	if refused != nil {
		return nil, refused
	}
	return hb, nil
}
