package pgdriver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
)

// heartbeatJobSQL extends one attempt's lease, as heartbeatJobsSQL does a
// batch's: the row is locked only if the attempt is current, skipping it
// when another transaction holds it (an open JobTx of the attempt
// share-locks it) rather than waiting, and the update re-checks the guard.
// It returns the new expiry, computed from the clock reading ttl before it.
// Parameters: $1 id, $2 fence, $3 ttl_us.
const heartbeatJobSQL = `
WITH locked AS (
    SELECT j.id FROM fenced_jobs j
    WHERE j.id = $1 AND j.fence = $2 AND ` + jobGuard + `
    FOR NO KEY UPDATE OF j SKIP LOCKED
)
UPDATE fenced_jobs j SET lease_expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond'
FROM locked WHERE j.id = locked.id AND j.fence = $2 AND ` + jobGuard + `
RETURNING j.cancel_requested, j.lease_expires_at`

// HeartbeatJob implements driver.JobDriver: one statement; when it extended
// nothing, a read after it tells a row held by the attempt's own
// transaction from an attempt no longer current (driver.DiagnoseHeartbeat).
func (d *Driver) HeartbeatJob(ctx context.Context, ref fencedtype.JobRef, ttl time.Duration) (*fencedtype.JobHeartbeat, error) {
	us := ttl.Microseconds()
	hb := &fencedtype.JobHeartbeat{Extended: true}
	err := retryDeadlock(ctx, func() error {
		return d.pool.QueryRow(ctx, heartbeatJobSQL, ref.ID, ref.Fence, us).Scan(&hb.CancelRequested, &hb.ExpiresAt)
	})
	if err == nil {
		hb.DecidedAt = hb.ExpiresAt.Add(-time.Duration(us) * time.Microsecond)
		return hb, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("heartbeat of job %d: %w", ref.ID, err)
	}
	j, err := scanJob(d.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM fenced_jobs j WHERE j.id = $1`, ref.ID))
	if errors.Is(err, pgx.ErrNoRows) {
		j, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read job %d: %w", ref.ID, err)
	}
	return driver.DiagnoseHeartbeat(ref, j)
}
