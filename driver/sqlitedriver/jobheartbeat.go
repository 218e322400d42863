package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

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
