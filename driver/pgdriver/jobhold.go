package pgdriver

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/fenced/fenced/driver"
	"github.com/jackc/pgx/v5"
)

// Held sequence jobs (migration 21, docs/design.md §6.10, "Held jobs"): a
// queued job of a sequence behind an earlier job that can block it is
// held, in no claim index. Its enqueue holds it (enqueueHeldSQL,
// copyHolds); a release (fenced_release_sequence) lets the next one go when
// the job before it stops blocking. A hold is only a hint: the limited claim tests every
// sequenced job it picks under the sequence's lock, so a job wrongly not
// held costs a pick, never the order. A job wrongly held would wait, so
// every transition that can end a sequence's head releases after it, and
// the maintainer's full sweep releases any head left held (releaseStuckSQL).

// seqRelease names a sequence to release after the job that stopped
// blocking it: the first job after that one that can block the sequence
// is released when it is held.
type seqRelease struct {
	queue, key string
	after      int64
}

// blockingSQL is true of a job row aliased j that can block its sequence
// (when it has one): open, or failed without sequence_continue_on_failed.
var blockingSQL = blocking("j")

// blocking is blockingSQL of a row aliased a.
func blocking(a string) string {
	return fmt.Sprintf(`%[1]s.state IN ('queued', 'running', 'failed') AND NOT (%[1]s.state = 'failed' AND %[1]s.sequence_continue_on_failed)`, a)
}

// The hold of an enqueued job (migration 21): held when a job of its
// sequence that can block it exists, or comes before it in the same
// enqueue. The enqueue decides it in its own statements, after it took the
// locks of its sequences shared (seqLockSharedSQL) in its transaction, and
// keeps them until it commits: a release (exclusive) that comes meanwhile
// waits for the commit and then sees the job. An enqueue whose jobs have
// unique options holds nothing (they are inserted by statements of their
// own, and a job not held only costs the claim a pick).

// seqLockSharedSQL takes the locks of the sequences of queues $1 and keys
// $2 shared, in the order of their lock ids: two enqueues, and a release
// that holds one lock while it tries others, never wait in a cycle.
const seqLockSharedSQL = `SELECT count(pg_advisory_xact_lock_shared(k)) FROM unnest(ARRAY(
    SELECT DISTINCT fenced_sequence_lock(u.q, u.k) FROM unnest($1::text[], $2::text[]) AS u(q, k) ORDER BY 1)) AS k`

// enqueueHeldSQL is enqueueSQL's held column of a row aliased i (its
// queue, skey and ord).
var enqueueHeldSQL = `CASE WHEN i.skey = '' THEN false
        ELSE row_number() OVER (PARTITION BY i.queue, i.skey ORDER BY i.ord) > 1
            OR EXISTS (SELECT 1 FROM fenced_jobs b WHERE b.queue = i.queue AND b.sequence_key = i.skey AND ` + blocking("b") + `) END`

// openSequencesSQL lists, of the sequences of queues $1 and keys $2, those
// with a job that can block them, for a copy's holds.
var openSequencesSQL = `SELECT u.q, u.k FROM unnest($1::text[], $2::text[]) AS u(q, k)
WHERE EXISTS (SELECT 1 FROM fenced_jobs b WHERE b.queue = u.q AND b.sequence_key = u.k AND ` + blocking("b") + `)`

// seqKey names a sequence.
type seqKey struct{ queue, key string }

// seqLocksOf lists the distinct sequences of jobs (queues and keys, for
// seqLockSharedSQL); ok is false when no job has a sequence key.
func seqLocksOf(jobs []driver.EnqueueParams) (queues, keys []string, ok bool) {
	seen := map[seqKey]bool{}
	for i := range jobs {
		j := &jobs[i]
		if k := (seqKey{j.Queue, j.SequenceKey}); j.SequenceKey != "" && !seen[k] {
			seen[k] = true
			queues, keys = append(queues, j.Queue), append(keys, j.SequenceKey)
		}
	}
	return queues, keys, len(queues) > 0
}

// copyHolds takes the locks of the sequences of jobs shared in tx and
// returns each job's hold for a copy (nil when no job has a sequence key).
func copyHolds(ctx context.Context, tx pgx.Tx, jobs []driver.EnqueueParams) ([]bool, error) {
	queues, keys, ok := seqLocksOf(jobs)
	if !ok {
		return nil, nil
	}
	if _, err := tx.Exec(ctx, seqLockSharedSQL, queues, keys); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, openSequencesSQL, queues, keys)
	open, err := collectRows(rows, err, func(r pgx.CollectableRow) (seqKey, error) {
		var k seqKey
		return k, r.Scan(&k.queue, &k.key)
	})
	if err != nil {
		return nil, err
	}
	behind := map[seqKey]bool{}
	for _, k := range open {
		behind[k] = true
	}
	held := make([]bool, len(jobs))
	for i := range jobs {
		if j := &jobs[i]; j.SequenceKey != "" {
			k := seqKey{j.Queue, j.SequenceKey}
			held[i], behind[k] = behind[k], true
		}
	}
	return held, nil
}

// releaseSequenceSQL releases one sequence (fenced_release_sequence): $4
// true only tries its lock, and returns -1 if another transaction holds it.
// The lock, once taken, is held until the transaction ends.
const releaseSequenceSQL = `SELECT fenced_release_sequence($1, $2, $3, $4)`

// releaseSequences releases rs on the pool. One transaction tries every
// sequence's lock and releases those it took (one round trip, one commit,
// one notice per queue); each sequence whose lock another transaction held
// — an enqueue of it that has not committed — is released after in a
// transaction of its own that waits for the lock. So a release never
// waits for one lock while it holds another: enqueues hold theirs shared,
// several at once, in the order of their rows, and could otherwise
// deadlock with it. A release that failed leaves its head held until the
// maintainer's sweep; it is not the end's failure, which has committed.
//
// A release commits asynchronously (synchronous_commit off for its
// transaction alone): it waits for no WAL flush, which would otherwise be
// most of a sequenced job's time on a disk that syncs slowly. Nothing can
// depend on it durably that does not flush it first — a claim of the
// released job commits synchronously, after it in the WAL — and a release
// a crash loses is made again by the maintainer's full sweep.
func (d *Driver) releaseSequences(ctx context.Context, rs []seqRelease) error {
	if len(rs) == 0 {
		return nil
	}
	rs = sortReleases(rs)
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SET LOCAL synchronous_commit = off`)
	for _, r := range rs {
		b.Queue(releaseSequenceSQL, r.queue, r.key, r.after, len(rs) > 1)
	}
	b.Queue(`COMMIT`)
	var busy []seqRelease
	err := d.pool.sendBatch(ctx, b, func(br pgx.BatchResults) error {
		busy = busy[:0]
		if err := execN(br, 2); err != nil {
			return err
		}
		for _, r := range rs {
			var got int64
			if err := br.QueryRow().Scan(&got); err != nil {
				return err
			}
			if got < 0 {
				busy = append(busy, r)
			}
		}
		return execN(br, 1)
	})
	if err != nil || len(busy) == 0 {
		return err
	}
	b = &pgx.Batch{}
	for _, r := range busy {
		b.Queue(`BEGIN`)
		b.Queue(`SET LOCAL synchronous_commit = off`)
		b.Queue(releaseSequenceSQL, r.queue, r.key, r.after, false)
		b.Queue(`COMMIT`)
	}
	return d.pool.sendBatch(ctx, b, func(br pgx.BatchResults) error { return execN(br, 4*len(busy)) })
}

// releasesOf are the releases after jobs ids of sequences (queues, keys),
// three arrays of one length as a statement aggregated them.
func releasesOf(queues, keys []string, ids []int64) []seqRelease {
	rs := make([]seqRelease, min(len(queues), len(keys), len(ids)))
	for i := range rs {
		rs[i] = seqRelease{queue: queues[i], key: keys[i], after: ids[i]}
	}
	return rs
}

// releaseSequencesIn releases rs inside the caller's transaction tx, where
// the end was written: the locks are then held until the caller commits.
// It waits for each lock in turn (a release after the caller's commit
// would be another transaction, and none runs then). A JobTx ends one job;
// a caller's transaction that ends jobs of several sequences may, rarely,
// deadlock with an enqueue of them, and PostgreSQL then aborts one.
func releaseSequencesIn(ctx context.Context, tx pgx.Tx, rs []seqRelease) error {
	if len(rs) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, r := range sortReleases(rs) {
		b.Queue(releaseSequenceSQL, r.queue, r.key, r.after, false)
	}
	br := tx.SendBatch(ctx, b)
	err := execN(br, len(rs))
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// sortReleases orders rs by sequence, and of two releases of one sequence
// keeps the one after the lower id (the later one can only find the same
// head or none).
func sortReleases(rs []seqRelease) []seqRelease {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b seqRelease) int {
		return cmp.Or(cmp.Compare(a.queue, b.queue), cmp.Compare(a.key, b.key), cmp.Compare(a.after, b.after))
	})
	return slices.CompactFunc(rs, func(a, b seqRelease) bool { return a.queue == b.queue && a.key == b.key })
}

// releaseStuckSQL finds the sequences whose head (their first job that can
// block them) is queued and held: one that a release missed, because its
// end committed and the release after it did not run, or ran in a
// REPEATABLE READ transaction whose snapshot predated an enqueue. It reads
// every open sequenced job once (fenced_jobs_sequence), so the maintainer
// runs it only with its full sweep. Each is then released after the job
// before its head.
const releaseStuckSQL = `
SELECT h.queue, h.sequence_key, h.id - 1 FROM (
    SELECT DISTINCT ON (s.queue, s.sequence_key) s.queue, s.sequence_key, s.id, s.state, s.held
    FROM fenced_jobs s
    WHERE s.sequence_key IS NOT NULL AND s.state IN ('queued', 'running', 'failed')
        AND NOT (s.state = 'failed' AND s.sequence_continue_on_failed)
    ORDER BY s.queue, s.sequence_key, s.id
) h
WHERE h.state = 'queued' AND h.held`

// releaseStuck releases the heads releaseStuckSQL finds.
func (d *Driver) releaseStuck(ctx context.Context) error {
	rows, err := d.pool.Query(ctx, releaseStuckSQL)
	rs, err := collectRows(rows, err, func(r pgx.CollectableRow) (seqRelease, error) {
		var s seqRelease
		return s, r.Scan(&s.queue, &s.key, &s.after)
	})
	if err == nil {
		err = d.releaseSequences(ctx, rs)
	}
	return err
}
