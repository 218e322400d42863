package mysqldriver

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// heartbeatJobsPickSQL locks, in id order, the rows of the attempts given
// that are still current, and skips rows another transaction holds (an open
// JobTx of the attempt share-locks its row): one long transaction cannot
// stall the heartbeat of every other job. Ends lock in id order too, so
// the two never wait for each other in a cycle. Parameters: the ids, then
// the (id, fence) pairs.
const heartbeatJobsPickSQL = `
SELECT id, cancel_requested FROM fenced_jobs FORCE INDEX (PRIMARY)
WHERE id IN (%s) AND (id, fence) IN (%s) AND ` + jobGuard + `
ORDER BY id
FOR UPDATE SKIP LOCKED`

// heartbeatJobsSQL extends the picked rows, re-checking the guard with its
// own clock, which it hands back as the LAST_INSERT_ID (microseconds since
// the epoch; see renewLeaseSQL). Parameters: ttl_us, the ids, then the
// (id, fence) pairs.
const heartbeatJobsSQL = `
UPDATE fenced_jobs FORCE INDEX (PRIMARY) SET lease_expires_at = ` + now + ` + INTERVAL ? MICROSECOND
WHERE id IN (%s) AND (id, fence) IN (%s) AND ` + jobGuard + `
    AND LAST_INSERT_ID(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ` + now + `)) > 0`

// jobCurrentSQL finds which attempts are still current. Parameters: the
// ids, then the (id, fence) pairs.
const jobCurrentSQL = `SELECT id FROM fenced_jobs FORCE INDEX (PRIMARY) WHERE id IN (%s) AND (id, fence) IN (%s) AND ` + jobGuard

// HeartbeatJobs implements driver.JobDriver, in one short transaction: the
// current rows are locked, then extended by one statement. A picked row
// whose lease ran out between the two statements is not extended; the rows
// stay locked, so those the statement extended are exactly the picked rows
// whose expiry is now past its clock reading. A job not picked is Lost
// unless a read after the transaction shows its attempt current (another
// transaction held its row): then it is Busy.
func (d *Driver) HeartbeatJobs(ctx context.Context, refs []fencedtype.JobRef, ttl time.Duration) (*fencedtype.HeartbeatResult, error) {
	if len(refs) == 0 {
		return &fencedtype.HeartbeatResult{}, nil
	}
	refs = slices.Clone(refs)
	slices.SortFunc(refs, func(a, b fencedtype.JobRef) int { return cmp.Compare(a.ID, b.ID) })
	res := &fencedtype.HeartbeatResult{}
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		*res = fencedtype.HeartbeatResult{}
		query, args := withRefs(heartbeatJobsPickSQL, refs)
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		var picked []fencedtype.JobRef
		cancel := map[int64]bool{}
		for rows.Next() {
			var r fencedtype.JobRef
			var c bool
			if err := rows.Scan(&r.ID, &c); err != nil {
				rows.Close()
				return err
			}
			picked, cancel[r.ID] = append(picked, r), c
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if len(picked) == 0 {
			return nil
		}
		for i := range picked {
			picked[i].Fence = fenceOf(refs, picked[i].ID)
		}
		query, args = withRefs(heartbeatJobsSQL, picked)
		result, err := tx.ExecContext(ctx, query, append([]any{ttl.Microseconds()}, args...)...)
		if err != nil {
			return err
		}
		n, err := result.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		at, err := result.LastInsertId()
		if err != nil {
			return err
		}
		decided := time.UnixMicro(at).UTC()
		res.ExpiresAt = decided.Add(time.Duration(ttl.Microseconds()) * time.Microsecond)
		ids := make([]int64, len(picked))
		for i, r := range picked {
			ids[i] = r.ID
		}
		if n < int64(len(picked)) {
			if ids, err = extendedSince(ctx, tx, ids, decided); err != nil {
				return err
			}
		}
		for _, id := range ids {
			res.Extended = append(res.Extended, id)
			if cancel[id] {
				res.CancelRequested = append(res.CancelRequested, id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("heartbeat: %w", notMigrated(err))
	}
	err = driver.SplitUnextended(res, refs, func(missing []fencedtype.JobRef) ([]int64, error) {
		query, args := withRefs(jobCurrentSQL, missing)
		return collectIDs(d.db.QueryContext(ctx, query, args...))
	})
	if err != nil {
		return nil, fmt.Errorf("heartbeat: %w", notMigrated(err))
	}
	return res, nil
}

// withRefs fills a query's (%s) IN lists for refs and returns its arguments:
// the ids, then the (id, fence) pairs.
func withRefs(query string, refs []fencedtype.JobRef) (string, []any) {
	args := make([]any, 0, 3*len(refs))
	for _, r := range refs {
		args = append(args, r.ID)
	}
	for _, r := range refs {
		args = append(args, r.ID, r.Fence)
	}
	return fmt.Sprintf(query, placeholders(len(refs)), pairPlaceholders(len(refs))), args
}

func fenceOf(refs []fencedtype.JobRef, id int64) int64 {
	i, _ := slices.BinarySearchFunc(refs, id, func(r fencedtype.JobRef, id int64) int { return cmp.Compare(r.ID, id) })
	return refs[i].Fence
}

// extendedSince returns which of the locked rows ids a heartbeat whose
// clock read decided extended: their lease now ends after that reading.
func extendedSince(ctx context.Context, tx *sql.Tx, ids []int64, decided time.Time) ([]int64, error) {
	return collectIDs(tx.QueryContext(ctx, `SELECT id FROM fenced_jobs WHERE id IN (`+placeholders(len(ids))+`)
		AND lease_expires_at > ?`, append(anys(ids), timeArg(decided))...))
}

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
