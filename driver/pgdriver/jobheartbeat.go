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
)

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

func splitRefs(refs []fencedtype.JobRef) (ids, fences []int64) {
	ids, fences = make([]int64, len(refs)), make([]int64, len(refs))
	for i, r := range refs {
		ids[i], fences[i] = r.ID, r.Fence
	}
	return ids, fences
}

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
