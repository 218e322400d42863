package pgdriver

import (
	"cmp"
	"context"
	"hash/fnv"
	"slices"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
)

// Lanes (migration 20, docs/design.md §6.17): a claim filtered by kind
// reads each lane (queue, kind, priority) from past its cursor, so it does
// not walk the index entries of the jobs claimed before it, which a pinned
// snapshot keeps from being removed.
//
// The cursor is safe because of one rule: a job enters a lane (takes a
// seq) only in a transaction that holds its lane's lock, laneKey(queue,
// kind), shared from before it draws the seq until it commits; a claim
// holds the locks of its kinds exclusively and takes its snapshot after
// them. Every seq below the largest a claim sees is then committed or will
// never be, and a claim that passes an entry passes only jobs no longer
// queued.

// laneKey is the advisory lock of the lanes of (queue, kind): FNV-1a of the
// queue and of one of laneBuckets buckets the kind falls in, under a prefix
// of its own. Kinds share buckets so that a claim or an enqueue holds at
// most laneBuckets locks per queue however many kinds it names (PostgreSQL's
// lock table is shared and small); two kinds of one bucket only wait for
// each other's claims.
func laneKey(queue, kind string) int64 {
	k := fnv.New32a()
	k.Write([]byte(kind))
	h := fnv.New64a()
	h.Write([]byte("fenced.job_lane\x00"))
	h.Write([]byte(queue))
	h.Write([]byte{0, byte(k.Sum32() % laneBuckets)})
	return int64(h.Sum64())
}

// laneBuckets is how many lane locks a queue has.
const laneBuckets = 16

// laneKeys are the sorted, distinct lane locks of kinds in queue: every
// holder takes them in this order.
func laneKeys(queue string, kinds []string) []int64 {
	keys := make([]int64, 0, len(kinds))
	for _, k := range kinds {
		keys = append(keys, laneKey(queue, k))
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// sequenced tells whether an enqueue on its own transaction puts j into a
// lane: it runs now (no run time or delay of its own) and has neither a
// concurrency nor a sequence key (keyed jobs are claimed the limited way,
// which the claim finds only among the waiting ones). Unique jobs are
// inserted by their own statements and wait.
func sequenced(j *driver.EnqueueParams) bool {
	return j.RunAt.IsZero() && j.Delay == 0 && j.ConcurrencyKey == "" && j.SequenceKey == "" && j.UniqueKey == nil
}

// laneEntry is the batch's lanes: the sorted distinct lane locks, and the
// distinct lanes to register, in (queue, kind, priority) order.
type laneEntry struct {
	keys       []int64
	queues     []string
	kinds      []string
	priorities []int32
}

// lanesOf lists the lanes of the sequenced jobs of a batch; ok is false
// when none is.
func lanesOf(jobs []driver.EnqueueParams) (laneEntry, bool) {
	type lane struct {
		queue, kind string
		priority    int
	}
	var lanes []lane
	var le laneEntry
	for i := range jobs {
		if j := &jobs[i]; sequenced(j) {
			lanes = append(lanes, lane{j.Queue, j.Kind, j.Priority})
			le.keys = append(le.keys, laneKey(j.Queue, j.Kind))
		}
	}
	if len(lanes) == 0 {
		return le, false
	}
	slices.SortFunc(lanes, func(a, b lane) int {
		if a.queue != b.queue {
			return cmp.Compare(a.queue, b.queue)
		}
		if a.kind != b.kind {
			return cmp.Compare(a.kind, b.kind)
		}
		return cmp.Compare(a.priority, b.priority)
	})
	lanes = slices.Compact(lanes)
	for _, l := range lanes {
		le.queues, le.kinds, le.priorities = append(le.queues, l.queue), append(le.kinds, l.kind), append(le.priorities, int32(l.priority))
	}
	slices.Sort(le.keys)
	le.keys = slices.Compact(le.keys)
	return le, true
}

// laneEnterSQL takes the lane locks of an enqueue ($1, sorted), shared,
// and registers its lanes ($2, $3, $4, sorted): a lane that exists costs a
// probe of the primary key and writes nothing.
const (
	laneLockSharedSQL = `SELECT count(pg_advisory_xact_lock_shared(k)) FROM unnest($1::bigint[]) AS k`
	laneRegisterSQL   = `INSERT INTO fenced_job_lanes (queue, kind, priority)
SELECT * FROM unnest($1::text[], $2::text[], $3::int[]) ON CONFLICT DO NOTHING`
)

// queueLaneEntry adds to b the statements that enter le's lanes; b must be
// sent inside a transaction (explicit, or the batch's implicit one) that
// then inserts the jobs.
func queueLaneEntry(b *pgx.Batch, le laneEntry) {
	b.Queue(laneLockSharedSQL, le.keys)
	b.Queue(laneRegisterSQL, le.queues, le.kinds, le.priorities)
}

// claimLanesSQL is the claim of a kind filter ($5, distinct kinds), after
// the claim took or tried the kinds' lane locks: from each
// lane of the kinds, its jobs past its cursor in seq order (fresh), and
// from each kind the queued jobs outside the lanes that are due, in claim
// order (waiting); of both, the first $3 by priority, the waiting first
// within a priority. A lane's rows are read without SKIP LOCKED: the cursor
// may pass only rows that are no longer queued, so a claim waits for a row
// another transaction holds (an operator's cancel) and judges it afresh.
// The cut keeps a prefix of each lane's rows in seq order, whose largest
// seq is appended as the lane's mark — only when the claim holds the lane
// locks of all its kinds, as the transaction's fenced.lane_locks setting
// says (laneLocksSQL, laneTryLocksSQL). A claim that could not take them
// claims the same way and moves no cursor: the jobs it takes are no longer
// queued when a claim that holds the locks passes them. A paused queue
// yields no job.
//
// Gating is claimJobsSQL's: a keyed job among those picked, or a global
// limit of the queue, and the claim starts nothing, marks nothing, and
// returns the first picked job with gated true.
const claimLanesSQL = `
WITH lanes AS (
    SELECT l.kind, l.priority, COALESCE((
        SELECT m.seq FROM fenced_job_lane_marks m
        WHERE m.queue = $1 AND m.kind = l.kind AND m.priority = l.priority
        ORDER BY m.seq DESC LIMIT 1), 0) AS cursor
    FROM fenced_job_lanes l
    WHERE l.queue = $1 AND l.kind = ANY($5::text[]) AND ` + queueNotPausedPG + `
    ORDER BY l.kind, l.priority
), fresh AS (
    SELECT f.* FROM lanes l CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.kind, j.seq, j.run_at,
            (j.concurrency_key IS NOT NULL OR j.sequence_key IS NOT NULL) AS keyed, 1 AS src
        FROM fenced_jobs j
        WHERE j.queue = $1 AND j.kind = l.kind AND j.priority = l.priority
            AND j.state = 'queued' AND j.fence = 0 AND j.seq IS NOT NULL AND j.seq > l.cursor
        ORDER BY j.seq
        LIMIT $3
        FOR UPDATE) f
), waiting AS (
    SELECT w.* FROM unnest($5::text[]) AS k(kind) CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.kind, NULL::bigint AS seq, j.run_at,
            (j.concurrency_key IS NOT NULL OR j.sequence_key IS NOT NULL) AS keyed, 0 AS src
        FROM fenced_jobs j
        WHERE j.queue = $1 AND j.kind = k.kind AND j.state = 'queued' AND (j.fence > 0 OR j.seq IS NULL) AND NOT j.held
            AND j.run_at <= clock_timestamp() AND ` + queueNotPausedPG + `
        ORDER BY j.priority, j.run_at, j.id
        LIMIT $3
        FOR UPDATE SKIP LOCKED) w
), picked AS (
    SELECT * FROM (SELECT * FROM waiting UNION ALL SELECT * FROM fresh) u
    ORDER BY priority, src, seq, run_at, id
    LIMIT $3
), ` + claimGatedSQL + `, marked AS (
    INSERT INTO fenced_job_lane_marks (queue, kind, priority, seq)
    SELECT $1, kind, priority, max(seq) FROM picked
    WHERE src = 1 AND NOT (SELECT yes FROM gated) AND current_setting('fenced.lane_locks', true) = 'true'
    GROUP BY kind, priority
), ` + claimStartSQL

// laneLocksSQL takes the lane locks of a claim ($1, sorted), waiting for
// them; laneTryLocksSQL tries them, and takes none it would wait for. Both
// set fenced.lane_locks, for the rest of the transaction, to whether the
// claim holds them all, and return it.
const (
	laneLocksSQL = `SELECT set_config('fenced.lane_locks', (count(pg_advisory_xact_lock(k)) >= 0)::text, true) = 'true'
FROM unnest($1::bigint[]) AS k`
	laneTryLocksSQL = `SELECT set_config('fenced.lane_locks', COALESCE(bool_and(pg_try_advisory_xact_lock(k)), true)::text, true) = 'true'
FROM unnest($1::bigint[]) AS k`
)

// laneMarkEvery bounds how long a queue's claims may go without moving
// their lanes' cursors: a claim whose queue had no claim that held its
// locks for this long waits for them. (A variable for a test.)
var laneMarkEvery = 100 * time.Millisecond

// claimLanes runs claimLanesSQL in one round trip: a READ COMMITTED
// transaction (whatever the session's default: the claim's snapshot must
// follow its locks) that takes or tries the lane locks of p.Kinds and
// claims. A claim tries the locks, so that it does not wait for an
// enqueue in progress (a large copy holds them shared until it commits),
// unless the queue's claims have not held them for laneMarkEvery.
func (d *Driver) claimLanes(ctx context.Context, p driver.ClaimJobsParams) ([]*fencedtype.Job, bool, error) {
	locks := laneTryLocksSQL
	if last, ok := d.laneMarked.Load(p.Queue); !ok || time.Since(last.(time.Time)) >= laneMarkEvery {
		locks = laneLocksSQL
	}
	keys := laneKeys(p.Queue, p.Kinds)
	var jobs []*fencedtype.Job
	var gated, locked bool
	// Claims lock their lanes' rows in lane and seq order; should two
	// claims still deadlock (different plans), the one aborted did nothing.
	err := retryDeadlock(ctx, func() error {
		b := &pgx.Batch{}
		b.Queue(`BEGIN ISOLATION LEVEL READ COMMITTED`)
		b.Queue(locks, keys)
		b.Queue(claimLanesSQL, p.Queue, p.Owner, p.Limit, p.TTL.Microseconds(), p.Kinds)
		b.Queue(`COMMIT`)
		return d.pool.sendBatch(ctx, b, func(br pgx.BatchResults) error {
			if _, err := br.Exec(); err != nil {
				return err
			}
			if err := br.QueryRow().Scan(&locked); err != nil {
				return err
			}
			s := newJobScanner(&gated)
			rows, err := br.Query()
			jobs, err = collectRows(rows, err, func(r pgx.CollectableRow) (*fencedtype.Job, error) { return s.scan(r) })
			if err != nil {
				return err
			}
			_, err = br.Exec()
			return err
		})
	})
	if err == nil && locked {
		d.laneMarked.Store(p.Queue, time.Now())
	}
	return jobs, gated, err
}

// execN reads the results of the next n statements of a batch, which
// return no rows the caller needs.
func execN(br pgx.BatchResults, n int) error {
	for range n {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	return nil
}

// trimLaneMarksSQL deletes every mark below its lane's newest: a lane's
// cursor is its newest mark alone.
const trimLaneMarksSQL = `
DELETE FROM fenced_job_lane_marks m
USING (SELECT queue, kind, priority, max(seq) AS seq FROM fenced_job_lane_marks GROUP BY queue, kind, priority) n
WHERE m.queue = n.queue AND m.kind = n.kind AND m.priority = n.priority AND m.seq < n.seq`

// laneEmptySQL is true when the lane row aliased l has no job past its
// cursor: a probe of fenced_jobs_lane.
const laneEmptySQL = `NOT EXISTS (
    SELECT 1 FROM fenced_jobs j
    WHERE j.queue = l.queue AND j.kind = l.kind AND j.priority = l.priority
        AND j.state = 'queued' AND j.fence = 0 AND j.seq IS NOT NULL
        AND j.seq > COALESCE((SELECT m.seq FROM fenced_job_lane_marks m
            WHERE m.queue = l.queue AND m.kind = l.kind AND m.priority = l.priority
            ORDER BY m.seq DESC LIMIT 1), 0))`

// emptyLanesSQL lists the lanes with no job past their cursor.
const emptyLanesSQL = `
SELECT l.queue, l.kind, l.priority FROM fenced_job_lanes l
WHERE ` + laneEmptySQL + `
LIMIT 1000`

// dropLaneSQL deletes lane ($1, $2, $3) if, on a snapshot taken after its
// lock, no job is past its cursor. Its newest mark stays: should the lane
// come back, its cursor starts there, past the jobs claimed from it before.
const dropLaneSQL = `
DELETE FROM fenced_job_lanes l
WHERE l.queue = $1 AND l.kind = $2 AND l.priority = $3 AND ` + laneEmptySQL

// dropEmptyLanes deletes the lanes with no job past their cursor, so that
// a claim, which probes every lane of its kinds, probes only lanes in use:
// each in a transaction of its own that holds the lane's lock exclusively
// (tried: a lane whose lock is busy is in use) and judges it on a snapshot
// taken after the lock, so that no enqueue into it is in flight. A later
// enqueue registers the lane again.
func (d *Driver) dropEmptyLanes(ctx context.Context) error {
	rows, err := d.pool.Query(ctx, emptyLanesSQL)
	if err != nil {
		return err
	}
	type lane struct {
		queue, kind string
		priority    int32
	}
	lanes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (lane, error) {
		var l lane
		return l, r.Scan(&l.queue, &l.kind, &l.priority)
	})
	if err != nil {
		return err
	}
	for _, l := range lanes {
		if err := d.dropLane(ctx, l.queue, l.kind, l.priority); err != nil {
			return err
		}
	}
	return nil
}

// dropLane is dropLaneSQL in a READ COMMITTED transaction that holds the
// lane's lock, when it can take it at once.
func (d *Driver) dropLane(ctx context.Context, queue, kind string, priority int32) error {
	tx, err := d.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var locked bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, laneKey(queue, kind)).Scan(&locked); err != nil || !locked {
		return err
	}
	if _, err := tx.Exec(ctx, dropLaneSQL, queue, kind, priority); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
