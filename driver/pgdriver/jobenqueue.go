package pgdriver

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
)

// enqueueSQL enqueues a batch in one statement. A row whose idempotency key
// exists already (or repeats within the batch) is skipped here and read
// back by the caller. Rows are inserted in input order, so their ids ascend
// in it. The first %s is the rows: enqueuePlainRows, or enqueueKeyedRows
// when a job of the batch has an idempotency key; the second is
// enqueueOnConflict in that case, else nothing: a plain insert logs no
// confirmation record per row, as an insert that may conflict does
// (docs/design.md §10, measurements). A row whose seqd ($15) is true enters
// its lane: it takes a seq, and the statement must run in a transaction
// that entered the lane first (queueLaneEntry). A row with a sequence key
// is held behind its sequence (the first %s: enqueueHeldSQL, or false for a
// batch without sequence keys, whose statement is planned and run at half
// the cost): the statement must run in a transaction that took its
// sequences' locks first (seqLockSharedSQL).
var enqueueSQL = `
INSERT INTO fenced_jobs AS j (kind, queue, args, priority, run_at, max_attempts, idempotency_key,
    concurrency_key, sequence_key, sequence_continue_on_failed, metadata, created_at, updated_at,
    policy, tags, seq, held)
SELECT i.kind, i.queue, i.args, i.priority,
    COALESCE(i.run_at, clock_timestamp() + i.delay_us * interval '1 microsecond'),
    i.max_attempts, NULLIF(i.ikey, ''), NULLIF(i.ckey, ''), NULLIF(i.skey, ''), i.scont, i.meta,
    clock_timestamp(), clock_timestamp(),
    i.policy, i.tags::text[], CASE WHEN i.seqd THEN nextval('fenced_job_seq') END,
    %s
FROM %s
ORDER BY i.ord%s`

const enqueueInput = `unnest($1::text[], $2::text[], $3::jsonb[], $4::int[], $5::timestamptz[], $6::bigint[], $7::int[], $8::text[],
        $9::text[], $10::text[], $11::bool[], $12::jsonb[],
        $13::jsonb[], $14::text[], $15::bool[])
    WITH ORDINALITY AS %s(kind, queue, args, priority, run_at, delay_us, max_attempts, ikey, ckey, skey, scont, meta, policy,
        tags, seqd, ord)`

// enqueueKeyedRows drops, before the insert, a row whose key exists already
// and each repeat of a key within the batch after its first: a row that
// reaches the insert draws its id from the identity's sequence even when ON
// CONFLICT then skips it, so a repeat would consume an id. Only a key
// inserted by a concurrent enqueuer after this statement's snapshot still
// reaches ON CONFLICT (and consumes an id); ON CONFLICT stays as the
// guarantee of one job per key.
var (
	enqueuePlainRows = fmt.Sprintf(enqueueInput, "i")
	enqueueKeyedRows = `(SELECT u.*, row_number() OVER (PARTITION BY u.ikey ORDER BY u.ord) AS nth
    FROM ` + fmt.Sprintf(enqueueInput, "u") + `) AS i
WHERE i.ikey = '' OR (i.nth = 1 AND NOT EXISTS (SELECT 1 FROM fenced_jobs e WHERE e.idempotency_key = i.ikey))`
)

const enqueueOnConflict = `
ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`

// enqueueStatements are the enqueue statements, by [idempotency keys][sequence
// keys][the jobs read back] in the batch.
var enqueueStatements = func() (st [2][2][2]string) {
	for keyed := range 2 {
		rows, conflict := enqueuePlainRows, ""
		if keyed == 1 {
			rows, conflict = enqueueKeyedRows, enqueueOnConflict
		}
		for seqs := range 2 {
			held := "false"
			if seqs == 1 {
				held = enqueueHeldSQL
			}
			st[keyed][seqs][0] = fmt.Sprintf(enqueueSQL, held, rows, conflict)
			st[keyed][seqs][1] = st[keyed][seqs][0] + enqueueReturning
		}
	}
	return st
}()

// enqueueStatement is the enqueue statement of jobs: with or without
// idempotency keys (keyed, as enqueueArgs says), with the holds of their
// sequences if one has a sequence key, reading the jobs back if returning.
func enqueueStatement(jobs []driver.EnqueueParams, keyed, returning bool) string {
	seqs := 0
	for i := range jobs {
		if jobs[i].SequenceKey != "" {
			seqs = 1
			break
		}
	}
	k, r := 0, 0
	if keyed {
		k = 1
	}
	if returning {
		r = 1
	}
	return enqueueStatements[k][seqs][r]
}

const enqueueReturning = `
RETURNING ` + jobColumns

// Enqueue implements driver.JobDriver.
func (d *Driver) Enqueue(ctx context.Context, tx driver.Tx, jobs []driver.EnqueueParams) ([]fencedtype.EnqueueResult, error) {
	if hasUnique(jobs) {
		return d.enqueueUnique(ctx, tx, jobs)
	}
	n := len(jobs)
	args, keyed := enqueueArgs(jobs)
	query := enqueueStatement(jobs, keyed, true)
	var q querier = d.pool
	var inserted []*fencedtype.Job
	var err error
	if tx != nil {
		ptx, err := pgxOf(tx)
		if err != nil {
			return nil, err
		}
		q = ptx
		if err = lockSequencesIn(ctx, ptx, jobs); err == nil {
			inserted, err = collectJobs(q.Query(ctx, query, append(args, make([]bool, n))...))
		}
	} else {
		inserted, err = d.enqueueInLanes(ctx, query, args, jobs)
	}
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", notMigrated(err))
	}
	// Ids are drawn in input order, so sorted by id the inserted rows are in
	// input order; the rest had an idempotency key that already existed.
	sort.Slice(inserted, func(a, b int) bool { return inserted[a].ID < inserted[b].ID })
	out := make([]fencedtype.EnqueueResult, n)
	byKey := map[string]*fencedtype.Job{}
	for _, j := range inserted {
		if j.IdempotencyKey != "" {
			byKey[j.IdempotencyKey] = j
		}
	}
	next, used := 0, map[string]bool{}
	var existing []string
	for i, in := range jobs {
		if k := in.IdempotencyKey; k != "" && (byKey[k] == nil || used[k]) {
			existing = append(existing, k)
			continue
		} else if k != "" {
			used[k] = true
		}
		out[i].Job = inserted[next]
		next++
	}
	if len(existing) == 0 {
		return out, nil
	}
	found, err := collectJobs(q.Query(ctx, `SELECT `+jobColumns+` FROM fenced_jobs j WHERE j.idempotency_key = ANY($1)`, existing))
	if err != nil {
		return nil, fmt.Errorf("enqueue: read existing keys: %w", err)
	}
	for _, j := range found {
		byKey[j.IdempotencyKey] = j
	}
	for i, in := range jobs {
		if out[i].Job == nil {
			out[i] = fencedtype.EnqueueResult{Job: byKey[in.IdempotencyKey], Existing: true}
			if out[i].Job == nil {
				return nil, fmt.Errorf("enqueue: idempotency key %q conflicted but its job was not found", in.IdempotencyKey)
			}
		}
	}
	return out, nil
}

// enqueueInLanes runs query (enqueueSQL returning the jobs) on its own
// transaction, with the jobs that run now in their lanes: one round trip
// that enters the lanes, then inserts.
func (d *Driver) enqueueInLanes(ctx context.Context, query string, args []any, jobs []driver.EnqueueParams) ([]*fencedtype.Job, error) {
	b, before := enterBatch(jobs)
	if b == nil {
		return collectJobs(d.pool.Query(ctx, query, append(args, make([]bool, len(jobs)))...))
	}
	b.Queue(query, append(args, sequencedRows(jobs))...)
	var inserted []*fencedtype.Job
	err := d.pool.sendBatch(ctx, b, func(br pgx.BatchResults) (err error) {
		if err = execN(br, before); err == nil {
			inserted, err = collectJobs(br.Query())
		}
		return err
	})
	return inserted, err
}

// enterBatch is the batch that an enqueue of jobs on its own transaction
// starts with, and how many statements it holds: it enters the jobs' lanes
// (queueLaneEntry) and takes their sequences' locks (seqLockSharedSQL).
// It is nil when there is neither: the insert alone then needs no
// transaction of its own.
func enterBatch(jobs []driver.EnqueueParams) (*pgx.Batch, int) {
	le, lanes := lanesOf(jobs)
	queues, keys, seqs := seqLocksOf(jobs)
	if !lanes && !seqs {
		return nil, 0
	}
	b, n := &pgx.Batch{}, 0
	if lanes {
		queueLaneEntry(b, le)
		n += 2
	}
	if seqs {
		b.Queue(seqLockSharedSQL, queues, keys)
		n++
	}
	return b, n
}

// lockSequencesIn takes the locks of the sequences of jobs shared in the
// caller's transaction tx, before it inserts them.
func lockSequencesIn(ctx context.Context, tx pgx.Tx, jobs []driver.EnqueueParams) error {
	queues, keys, ok := seqLocksOf(jobs)
	if !ok {
		return nil
	}
	_, err := tx.Exec(ctx, seqLockSharedSQL, queues, keys)
	return err
}

// sequencedRows is enqueueSQL's $15: which jobs enter their lanes.
func sequencedRows(jobs []driver.EnqueueParams) []bool {
	seqd := make([]bool, len(jobs))
	for i := range jobs {
		seqd[i] = sequenced(&jobs[i])
	}
	return seqd
}

// enqueueArgs are enqueueSQL's arguments for jobs, and whether one of them
// has an idempotency key.
func enqueueArgs(jobs []driver.EnqueueParams) (args []any, keyed bool) {
	n := len(jobs)
	kinds, queues, jargs, keys := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	prios, maxes, delays := make([]int32, n), make([]int32, n), make([]int64, n)
	runAts := make([]*time.Time, n)
	ckeys, skeys, sconts := make([]string, n), make([]string, n), make([]bool, n)
	metas := make([]*string, n)    // nil: NULL, no metadata
	policies := make([]*string, n) // nil: NULL, no policy of its own
	tags := make([]*string, n)     // nil: NULL, no tags; else a text[] literal
	for i, j := range jobs {
		tags[i] = tagsLiteral(j.Tags)
		if j.Metadata != nil {
			m := string(j.Metadata)
			metas[i] = &m
		}
		if j.Policy != nil {
			p := string(j.Policy)
			policies[i] = &p
		}
		kinds[i], queues[i], jargs[i], keys[i] = j.Kind, j.Queue, string(j.Args), j.IdempotencyKey
		keyed = keyed || j.IdempotencyKey != ""
		ckeys[i], skeys[i], sconts[i] = j.ConcurrencyKey, j.SequenceKey, j.SequenceContinueOnFailed
		prios[i], maxes[i], delays[i] = int32(j.Priority), int32(j.MaxAttempts), j.Delay.Microseconds()
		if !j.RunAt.IsZero() {
			t := j.RunAt
			runAts[i] = &t
		}
	}
	return []any{kinds, queues, jargs, prios, runAts, delays, maxes, keys, ckeys, skeys, sconts, metas, policies,
		tags}, keyed
}

// tagsLiteral is tags as a text[] literal, each element quoted (so a tag
// "NULL" is the string), or nil for none: unnest takes one array per job
// this way, where a two-dimensional array would need equal lengths. Valid
// tags hold no quote, backslash, brace, comma or space (fenced.validTag).
func tagsLiteral(tags []string) *string {
	if len(tags) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, t := range tags {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(t)
		b.WriteByte('"')
	}
	b.WriteByte('}')
	s := b.String()
	return &s
}
