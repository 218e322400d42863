package pgdriver

import (
	"context"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var _ driver.BulkEnqueuer = (*Driver)(nil)

// bulkColumns are the columns EnqueueBulk copies in; the others take their
// defaults: state queued, fence and attempt 0, and the times (created,
// runnable) from the database's clock (migration 13).
var bulkColumns = []string{"kind", "queue", "args", "priority", "max_attempts",
	"concurrency_key", "sequence_key", "sequence_continue_on_failed", "metadata",
	"policy", "tags"}

// EnqueueBulk implements driver.BulkEnqueuer. When every job runs now and
// none has an idempotency key, the batch is copied in (COPY FROM STDIN,
// binary): the cheapest insert PostgreSQL has, which fires the same
// statement-level trigger (the notice to idle workers) as an INSERT.
// Otherwise it is Enqueue's INSERT without reading the jobs back. It
// returns how many jobs were inserted: a job whose idempotency key exists
// already is not.
func (d *Driver) EnqueueBulk(ctx context.Context, tx driver.Tx, jobs []driver.EnqueueParams) (int, error) {
	if bulkUnique(jobs) {
		return d.enqueueUniqueBulk(ctx, tx, jobs)
	}
	if hasUnique(jobs) {
		res, err := d.enqueueUnique(ctx, tx, jobs)
		n := 0
		for _, r := range res {
			if !r.Existing {
				n++
			}
		}
		return n, err
	}
	var q bulkInserter = d.pool
	if tx != nil {
		ptx, err := pgxOf(tx)
		if err != nil {
			return 0, err
		}
		q = ptx
	}
	var n int64
	var err error
	switch {
	case tx == nil && copyable(jobs):
		n, err = d.copyInLanes(ctx, jobs)
	case tx == nil:
		n, err = d.insertInLanes(ctx, jobs)
	case copyable(jobs):
		n, err = copyIn(ctx, tx, jobs)
	default:
		args, keyed := enqueueArgs(jobs)
		query := enqueueStatement(jobs, keyed, false)
		ptx, _ := pgxOf(tx)
		if err = lockSequencesIn(ctx, ptx, jobs); err == nil {
			var tag pgconn.CommandTag
			tag, err = q.Exec(ctx, query, append(args, make([]bool, len(jobs)))...)
			n = tag.RowsAffected()
		}
	}
	if err != nil {
		return 0, fmt.Errorf("enqueue: %w", notMigrated(err))
	}
	return int(n), nil
}

// insertInLanes is EnqueueBulk's INSERT on its own transaction, with the
// jobs that run now in their lanes: one round trip.
func (d *Driver) insertInLanes(ctx context.Context, jobs []driver.EnqueueParams) (int64, error) {
	args, keyed := enqueueArgs(jobs)
	query := enqueueStatement(jobs, keyed, false)
	b, before := enterBatch(jobs)
	if b == nil {
		tag, err := d.pool.Exec(ctx, query, append(args, make([]bool, len(jobs)))...)
		return tag.RowsAffected(), err
	}
	b.Queue(query, append(args, sequencedRows(jobs))...)
	var tag pgconn.CommandTag
	err := d.pool.sendBatch(ctx, b, func(br pgx.BatchResults) (err error) {
		if err = execN(br, before); err == nil {
			tag, err = br.Exec()
		}
		return err
	})
	return tag.RowsAffected(), err
}

// laneSeqsSQL draws $1 seqs, in ascending order.
const laneSeqsSQL = `SELECT nextval('fenced_job_seq') FROM generate_series(1, $1::int) ORDER BY 1`

// copyInLanes is EnqueueBulk's copy on its own transaction: it enters the
// jobs' lanes and draws their seqs (one round trip), takes their
// sequences' locks and decides their holds (copyHolds), then copies them
// in with the seqs and holds, and commits. Every job of a copy runs now;
// those with a key wait outside the lanes. A copy with neither lanes nor
// sequences is one COPY without a transaction of its own.
func (d *Driver) copyInLanes(ctx context.Context, jobs []driver.EnqueueParams) (n int64, err error) {
	le, lanes := lanesOf(jobs)
	if _, _, seqs := seqLocksOf(jobs); !lanes && !seqs {
		return d.pool.CopyFrom(ctx, pgx.Identifier{"fenced_jobs"}, bulkColumns, &bulkRows{jobs: jobs, i: -1})
	}
	err = d.pool.inTx(ctx, func(tx pgx.Tx) error {
		var seqs []any
		if lanes {
			var err error
			if seqs, err = enterLanes(ctx, tx, le, jobs); err != nil {
				return err
			}
		}
		held, err := copyHolds(ctx, tx, jobs)
		if err != nil {
			return err
		}
		n, err = copyRows(ctx, tx, jobs, seqs, held)
		return err
	})
	return n, err
}

// copyIn is EnqueueBulk's copy in the caller's transaction tx: outside the
// lanes, held behind their sequences.
func copyIn(ctx context.Context, tx driver.Tx, jobs []driver.EnqueueParams) (int64, error) {
	ptx, err := pgxOf(tx)
	if err != nil {
		return 0, err
	}
	held, err := copyHolds(ctx, ptx, jobs)
	if err != nil {
		return 0, err
	}
	return copyRows(ctx, ptx, jobs, nil, held)
}

// enterLanes enters the lanes le of jobs in tx and draws the seqs of those
// that enter them: each job's seq, nil (NULL) for one outside the lanes.
func enterLanes(ctx context.Context, tx pgx.Tx, le laneEntry, jobs []driver.EnqueueParams) ([]any, error) {
	seqd := sequencedRows(jobs)
	want := 0
	for _, s := range seqd {
		if s {
			want++
		}
	}
	b := &pgx.Batch{}
	queueLaneEntry(b, le)
	b.Queue(laneSeqsSQL, want)
	br := tx.SendBatch(ctx, b)
	err := execN(br, 2)
	var seqs []int64
	if err == nil {
		rows, qerr := br.Query()
		seqs, err = collectRows(rows, qerr, pgx.RowTo[int64])
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && len(seqs) != want {
		err = fmt.Errorf("drew %d seqs for %d jobs", len(seqs), want)
	}
	if err != nil {
		return nil, err
	}
	vals := make([]any, len(jobs))
	for i, next := 0, 0; i < len(jobs); i++ {
		if seqd[i] {
			vals[i], next = seqs[next], next+1
		}
	}
	return vals, nil
}

// copyRows copies jobs into fenced_jobs in tx, with each job's seq when
// seqs is not nil and its hold when held is not nil.
func copyRows(ctx context.Context, tx pgx.Tx, jobs []driver.EnqueueParams, seqs []any, held []bool) (int64, error) {
	cols := bulkColumns
	if seqs != nil {
		cols = append(cols[:len(cols):len(cols)], "seq")
	}
	if held != nil {
		cols = append(cols[:len(cols):len(cols)], "held")
	}
	return tx.CopyFrom(ctx, pgx.Identifier{"fenced_jobs"}, cols, &extraRows{bulkRows: bulkRows{jobs: jobs, i: -1}, seqs: seqs, held: held})
}

// extraRows are bulkRows with each job's seq (nil: NULL) and hold, for the
// columns copyRows names.
type extraRows struct {
	bulkRows
	seqs []any
	held []bool
	row  []any
}

func (r *extraRows) Values() ([]any, error) {
	v, _ := r.bulkRows.Values()
	r.row = append(r.row[:0], v...)
	if r.seqs != nil {
		r.row = append(r.row, r.seqs[r.i])
	}
	if r.held != nil {
		r.row = append(r.row, r.held[r.i])
	}
	return r.row, nil
}

// bulkInserter is what EnqueueBulk needs of the pool or of a transaction.
type bulkInserter interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

// copyable tells whether every job takes the column defaults a copy relies
// on: no run time or delay of its own, no idempotency key.
func copyable(jobs []driver.EnqueueParams) bool {
	for _, j := range jobs {
		if !j.RunAt.IsZero() || j.Delay != 0 || j.IdempotencyKey != "" {
			return false
		}
	}
	return true
}

// bulkRows is a pgx.CopyFromSource of jobs, in bulkColumns' order.
type bulkRows struct {
	jobs []driver.EnqueueParams
	i    int
	vals [11]any
}

func (r *bulkRows) Next() bool {
	r.i++
	return r.i < len(r.jobs)
}

func (r *bulkRows) Err() error { return nil }

func (r *bulkRows) restart() { r.i = -1 }

func (r *bulkRows) Values() ([]any, error) {
	j := &r.jobs[r.i]
	var meta any // NULL
	if j.Metadata != nil {
		meta = j.Metadata
	}
	var policy any // NULL
	if j.Policy != nil {
		policy = j.Policy
	}
	var tags any // NULL
	if len(j.Tags) > 0 {
		tags = j.Tags
	}
	r.vals = [11]any{j.Kind, j.Queue, j.Args, int32(j.Priority), int32(j.MaxAttempts),
		nullIfEmpty(j.ConcurrencyKey), nullIfEmpty(j.SequenceKey), j.SequenceContinueOnFailed, meta,
		policy, tags}
	return r.vals[:], nil
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
