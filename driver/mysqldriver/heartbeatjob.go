package mysqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// heartbeatJobPickSQL locks one attempt's row if the attempt is current,
// skipping it when another transaction holds it (an open JobTx of the
// attempt share-locks it) rather than waiting. Parameters: id, fence.
const heartbeatJobPickSQL = `
SELECT cancel_requested FROM fenced_jobs FORCE INDEX (PRIMARY)
WHERE id = ? AND fence = ? AND ` + jobGuard + `
FOR UPDATE SKIP LOCKED`

// heartbeatJobSQL extends the picked row, re-checking the guard with its own
// clock, which it hands back (clockAsInsertID). Parameters: ttl_us, id,
// fence.
const heartbeatJobSQL = `
UPDATE fenced_jobs FORCE INDEX (PRIMARY) SET lease_expires_at = ` + now + ` + INTERVAL ? MICROSECOND
WHERE id = ? AND fence = ? AND ` + jobGuard + ` AND ` + clockAsInsertID

// HeartbeatJob implements driver.JobDriver, in one short transaction: the
// row is picked and extended; when it was not, a locking read in the same
// transaction (a share lock, which an open JobTx's share lock does not
// block) tells a row held by the attempt's own transaction from an attempt
// no longer current (driver.DiagnoseHeartbeat).
func (d *Driver) HeartbeatJob(ctx context.Context, ref fencedtype.JobRef, ttl time.Duration) (*fencedtype.JobHeartbeat, error) {
	us := ttl.Microseconds()
	var hb *fencedtype.JobHeartbeat
	var refused error
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		hb, refused = nil, nil
		var cancel bool
		err := tx.QueryRowContext(ctx, heartbeatJobPickSQL, ref.ID, ref.Fence).Scan(&cancel)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err == nil {
			n, at, err := execAt(ctx, tx, heartbeatJobSQL, us, ref.ID, ref.Fence)
			if err != nil {
				return err
			}
			if n == 1 {
				hb = &fencedtype.JobHeartbeat{ExpiresAt: at.Add(time.Duration(us) * time.Microsecond),
					CancelRequested: cancel, Extended: true, DecidedAt: at}
				return nil
			}
		}
		j, err := readJob(ctx, tx, jobLockSQL, ref.ID)
		if err != nil {
			return fmt.Errorf("read job %d: %w", ref.ID, err)
		}
		hb, refused = driver.DiagnoseHeartbeat(ref, j)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("heartbeat of job %d: %w", ref.ID, err)
	}
	return hb, refused
}
