package pgdriver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// uniqueHeld is the predicate of the partial index fenced_jobs_unique
// (migration 18) on the row aliased %[1]s: a unique job holds its slot
// while its state is one of its own unique states. A query states it as
// the index does, so the planner proves the index usable.
const uniqueHeld = `%[1]s.unique_key IS NOT NULL AND (%[1]s.unique_states & CASE %[1]s.state WHEN 'queued' THEN 1 WHEN 'running' THEN 2
        WHEN 'succeeded' THEN 4 WHEN 'failed' THEN 8 WHEN 'cancelled' THEN 16 ELSE 0 END) <> 0`

// enqueueUniqueSQL enqueues one job of a batch holding a unique job, and
// returns it, or the job holding its slot (or its idempotency key), with a
// last column saying which (true: existing). b computes run_at once, by the
// database clock when none is given, and the bucket from it. The NOT
// EXISTS lookups skip a job whose slot or key is held before it draws an
// id; ON CONFLICT DO NOTHING (every unique index its arbiter, the partial
// one included) skips one that a concurrent enqueuer took since, after
// waiting for that enqueuer's transaction. The second branch reads the
// holder in the statement's snapshot: one committed since is not in it,
// and the caller runs the statement again (in a new snapshot under READ
// COMMITTED), where the lookup sees it, or, if it left the slot
// meanwhile, the insert takes the slot. Parameters are enqueueSQL's
// columns ($1-$14, one job) then $15 unique key (NULL for none), $16
// period in seconds, $17 unique states.
var enqueueUniqueSQL = `
WITH b AS MATERIALIZED (
    SELECT v.at, CASE WHEN $16::bigint > 0 THEN floor(extract(epoch FROM v.at) / $16::bigint)::bigint ELSE 0 END AS bucket
    FROM (SELECT COALESCE($5::timestamptz, clock_timestamp() + $6::bigint * interval '1 microsecond') AS at) v),
ins AS (
    INSERT INTO fenced_jobs AS j (kind, queue, args, priority, run_at, max_attempts, idempotency_key,
        concurrency_key, sequence_key, sequence_continue_on_failed, metadata, created_at, updated_at,
        policy, tags, unique_key, unique_bucket, unique_states)
    SELECT $1::text, $2::text, $3::jsonb, $4::int, b.at, $7::int, NULLIF($8::text, ''), NULLIF($9::text, ''), NULLIF($10::text, ''),
        $11::bool, $12::jsonb, clock_timestamp(), clock_timestamp(), $13::jsonb, $14::text[], $15::bytea, CASE WHEN $15::bytea IS NULL THEN NULL ELSE b.bucket END,
        CASE WHEN $15::bytea IS NULL THEN NULL ELSE $17::int END
    FROM b
    WHERE ($15::bytea IS NULL OR NOT EXISTS (SELECT 1 FROM fenced_jobs e
            WHERE e.unique_key = $15::bytea AND e.unique_bucket = b.bucket AND ` + fmt.Sprintf(uniqueHeld, "e") + `))
        AND ($8::text = '' OR NOT EXISTS (SELECT 1 FROM fenced_jobs e WHERE e.idempotency_key = $8::text))
    ON CONFLICT DO NOTHING
    RETURNING ` + jobColumns + `, false)
SELECT * FROM ins
UNION ALL
(SELECT ` + jobColumns + `, true FROM fenced_jobs j, b
WHERE NOT EXISTS (SELECT 1 FROM ins) AND (
    (j.unique_key = $15::bytea AND j.unique_bucket = b.bucket AND ` + fmt.Sprintf(uniqueHeld, "j") + `)
    OR j.idempotency_key = NULLIF($8::text, ''))
LIMIT 1)`

// uniqueTries bounds the runs of enqueueUniqueSQL for one job: each run
// that returns nothing saw a holder that a concurrent transaction
// committed, or one that left the slot, since its snapshot.
const uniqueTries = 8

// hasUnique tells whether a job of the batch is unique.
func hasUnique(jobs []driver.EnqueueParams) bool {
	for i := range jobs {
		if jobs[i].UniqueKey != nil {
			return true
		}
	}
	return false
}

// enqueueUnique is Enqueue of a batch holding a unique job: one statement
// per job, in input order, in tx or else in a transaction of its own (a
// single job: the statement alone). A deadlock between two such batches
// (their slots taken in different orders) retries the whole batch when the
// transaction is its own.
func (d *Driver) enqueueUnique(ctx context.Context, tx driver.Tx, jobs []driver.EnqueueParams) ([]fencedtype.EnqueueResult, error) {
	if tx != nil {
		ptx, err := pgxOf(tx)
		if err != nil {
			return nil, err
		}
		return insertUnique(ctx, ptx, jobs)
	}
	if len(jobs) == 1 {
		return insertUnique(ctx, d.pool, jobs)
	}
	for try := 0; ; try++ {
		var out []fencedtype.EnqueueResult
		err := d.pool.inTx(ctx, func(tx pgx.Tx) (err error) {
			out, err = insertUnique(ctx, tx, jobs)
			return err
		})
		var pe *pgconn.PgError
		if try < 3 && errors.As(err, &pe) && pe.Code == "40P01" {
			continue
		}
		return out, err
	}
}

func insertUnique(ctx context.Context, q querier, jobs []driver.EnqueueParams) ([]fencedtype.EnqueueResult, error) {
	all, _ := enqueueArgs(jobs)
	out := make([]fencedtype.EnqueueResult, len(jobs))
	for i, p := range jobs {
		args := make([]any, 0, 17)
		for _, col := range all {
			args = append(args, element(col, i))
		}
		var key []byte // nil: NULL
		if p.UniqueKey != nil {
			key = p.UniqueKey
		}
		args = append(args, key, p.UniquePeriod, p.UniqueStates)
		var err error
		for try := 0; try < uniqueTries; try++ {
			var existing bool
			var j *fencedtype.Job
			j, err = newJobScanner(&existing).scan(q.QueryRow(ctx, enqueueUniqueSQL, args...))
			if err == nil {
				out[i] = fencedtype.EnqueueResult{Job: j, Existing: existing}
				break
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return nil, fmt.Errorf("enqueue: %w", notMigrated(err))
			}
		}
		if err != nil {
			return nil, fmt.Errorf("enqueue: job %d of %d: its unique slot or key stayed held by jobs that kept leaving it", i+1, len(jobs))
		}
	}
	return out, nil
}

// element is the i-th element of one of enqueueArgs' slices.
func element(col any, i int) any {
	switch c := col.(type) {
	case []string:
		return c[i]
	case []int32:
		return c[i]
	case []int64:
		return c[i]
	case []bool:
		return c[i]
	case []*time.Time:
		if c[i] == nil {
			return nil
		}
		return *c[i]
	case []*string:
		if c[i] == nil {
			return nil
		}
		return *c[i]
	}
	panic(fmt.Sprintf("pgdriver: enqueue argument of type %T", col))
}

// uniqueHolderSQL finds the job holding the unique slot of job $1.
var uniqueHolderSQL = `SELECT e.id FROM fenced_jobs r JOIN fenced_jobs e ON e.unique_key = r.unique_key
    AND e.unique_bucket = r.unique_bucket AND e.id <> r.id AND ` + fmt.Sprintf(uniqueHeld, "e") + `
WHERE r.id = $1 LIMIT 1`

// uniqueConflict turns a state change of job id refused by the unique
// index into a *fencedtype.UniqueConflictError naming the holder, or
// returns nil for any other error.
func (d *Driver) uniqueConflict(ctx context.Context, op string, id int64, err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" || pe.ConstraintName != "fenced_jobs_unique" {
		return nil
	}
	e := &fencedtype.UniqueConflictError{Op: op, ID: id}
	if rerr := d.pool.QueryRow(ctx, uniqueHolderSQL, id).Scan(&e.ExistingID); rerr != nil && !errors.Is(rerr, pgx.ErrNoRows) {
		return fmt.Errorf("%s job %d: %w (and reading the holder of its unique slot: %v)", op, id, fencedtype.ErrUniqueConflict, rerr)
	}
	return e
}

// enqueueUniqueBulkSQL is EnqueueBulk's one statement for a batch holding
// unique jobs and no idempotency key: enqueueSQL's input with three more
// arrays ($15 unique keys, NULL for a job that is not unique; $16 periods;
// $17 states). i computes each job's run_at once and its bucket from it; a
// unique job is skipped, before it draws an id, when a job holds its slot
// or an earlier job of the batch has it (row_number), and ON CONFLICT DO
// NOTHING skips one whose slot a concurrent enqueuer took since. Nothing is
// read back: the count of rows is the count of jobs inserted.
var enqueueUniqueBulkSQL = `
WITH i AS MATERIALIZED (
    SELECT v.*, CASE WHEN v.uperiod > 0 THEN floor(extract(epoch FROM v.at) / v.uperiod)::bigint ELSE 0 END AS bucket
    FROM (SELECT u.*, COALESCE(u.run_at, clock_timestamp() + u.delay_us * interval '1 microsecond') AS at
        FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::int[], $5::timestamptz[], $6::bigint[], $7::int[], $8::text[],
            $9::text[], $10::text[], $11::bool[], $12::jsonb[], $13::jsonb[], $14::text[], $15::bytea[], $16::bigint[], $17::int[])
        WITH ORDINALITY AS u(kind, queue, args, priority, run_at, delay_us, max_attempts, ikey, ckey, skey, scont, meta,
            policy, tags, ukey, uperiod, ustates, ord)) v),
f AS (SELECT i.*, row_number() OVER (PARTITION BY i.ukey, i.bucket ORDER BY i.ord) AS nth FROM i)
INSERT INTO fenced_jobs AS j (kind, queue, args, priority, run_at, max_attempts, idempotency_key,
    concurrency_key, sequence_key, sequence_continue_on_failed, metadata, created_at, updated_at,
    policy, tags, unique_key, unique_bucket, unique_states)
SELECT f.kind, f.queue, f.args, f.priority, f.at, f.max_attempts, NULL, NULLIF(f.ckey, ''), NULLIF(f.skey, ''), f.scont, f.meta,
    clock_timestamp(), clock_timestamp(), f.policy, f.tags::text[], f.ukey, CASE WHEN f.ukey IS NULL THEN NULL ELSE f.bucket END,
    CASE WHEN f.ukey IS NULL THEN NULL ELSE f.ustates END
FROM f
WHERE f.ukey IS NULL OR (f.nth = 1 AND NOT EXISTS (SELECT 1 FROM fenced_jobs e
    WHERE e.unique_key = f.ukey AND e.unique_bucket = f.bucket AND ` + fmt.Sprintf(uniqueHeld, "e") + `))
ORDER BY f.ord`

// uniqueBulkOnConflict makes enqueueUniqueBulkSQL skip a job whose slot a
// concurrent enqueuer took since its lookup, inside a caller's
// transaction, which a unique violation would abort. Alone, the statement
// goes without it (a speculative insertion per row costs more than the
// rare rerun): a violation undoes the whole statement, which then runs
// again, its lookups seeing the slot's holder committed.
const uniqueBulkOnConflict = `
ON CONFLICT DO NOTHING`

// enqueueUniqueFlatSQL is enqueueUniqueBulkSQL for a batch without
// periods, whose repeats the caller dropped (flatUnique): every bucket is
// 0, known before the statement, so it needs no CTE and no window over
// the slots.
var enqueueUniqueFlatSQL = `
INSERT INTO fenced_jobs AS j (kind, queue, args, priority, run_at, max_attempts, idempotency_key,
    concurrency_key, sequence_key, sequence_continue_on_failed, metadata, created_at, updated_at,
    policy, tags, unique_key, unique_bucket, unique_states)
SELECT i.kind, i.queue, i.args, i.priority,
    COALESCE(i.run_at, clock_timestamp() + i.delay_us * interval '1 microsecond'),
    i.max_attempts, NULL, NULLIF(i.ckey, ''), NULLIF(i.skey, ''), i.scont, i.meta,
    clock_timestamp(), clock_timestamp(), i.policy, i.tags::text[], i.ukey, CASE WHEN i.ukey IS NULL THEN NULL ELSE 0 END,
    CASE WHEN i.ukey IS NULL THEN NULL ELSE i.ustates END
FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::int[], $5::timestamptz[], $6::bigint[], $7::int[], $8::text[],
        $9::text[], $10::text[], $11::bool[], $12::jsonb[], $13::jsonb[], $14::text[], $15::bytea[], $16::bigint[], $17::int[])
    WITH ORDINALITY AS i(kind, queue, args, priority, run_at, delay_us, max_attempts, ikey, ckey, skey, scont, meta,
        policy, tags, ukey, uperiod, ustates, ord)
WHERE i.ukey IS NULL OR NOT EXISTS (SELECT 1 FROM fenced_jobs e
    WHERE e.unique_key = i.ukey AND e.unique_bucket = 0 AND ` + fmt.Sprintf(uniqueHeld, "e") + `)
ORDER BY i.ord`

// flatUnique returns jobs without the repeats of a slot after its first,
// and enqueueUniqueFlatSQL for them, when no job has a period; else jobs
// as they are and enqueueUniqueBulkSQL.
func flatUnique(jobs []driver.EnqueueParams) ([]driver.EnqueueParams, string) {
	for i := range jobs {
		if jobs[i].UniquePeriod != 0 {
			return jobs, enqueueUniqueBulkSQL
		}
	}
	seen := make(map[string]bool, len(jobs))
	out := make([]driver.EnqueueParams, 0, len(jobs))
	for _, j := range jobs {
		if j.UniqueKey != nil {
			if seen[string(j.UniqueKey)] {
				continue
			}
			seen[string(j.UniqueKey)] = true
		}
		out = append(out, j)
	}
	return out, enqueueUniqueFlatSQL
}

// bulkUnique tells whether EnqueueBulk can insert jobs with
// enqueueUniqueBulkSQL: a unique job among them, and no idempotency key.
func bulkUnique(jobs []driver.EnqueueParams) bool {
	unique := false
	for i := range jobs {
		if jobs[i].IdempotencyKey != "" {
			return false
		}
		unique = unique || jobs[i].UniqueKey != nil
	}
	return unique
}

// uniqueBulkArgs are enqueueUniqueBulkSQL's arguments.
func uniqueBulkArgs(jobs []driver.EnqueueParams) []any {
	args, _ := enqueueArgs(jobs)
	keys, periods, states := make([][]byte, len(jobs)), make([]int64, len(jobs)), make([]int32, len(jobs))
	for i, j := range jobs {
		keys[i], periods[i], states[i] = j.UniqueKey, j.UniquePeriod, int32(j.UniqueStates)
	}
	return append(args, keys, periods, states)
}

// enqueueUniqueBulk runs enqueueUniqueBulkSQL in tx (with
// uniqueBulkOnConflict), or alone, run again when it met a slot a
// concurrent enqueuer took since its lookups, or deadlocked with another
// batch taking the same slots in another order. A standalone batch that
// copyUnique can take is copied in first.
func (d *Driver) enqueueUniqueBulk(ctx context.Context, tx driver.Tx, jobs []driver.EnqueueParams) (int, error) {
	jobs, query := flatUnique(jobs)
	if tx == nil && query == enqueueUniqueFlatSQL && copyable(jobs) {
		if n, ok, err := d.copyUnique(ctx, jobs); ok || err != nil {
			return n, err
		}
	}
	args := uniqueBulkArgs(jobs)
	if tx != nil {
		ptx, err := pgxOf(tx)
		if err != nil {
			return 0, err
		}
		tag, err := ptx.Exec(ctx, query+uniqueBulkOnConflict, args...)
		if err != nil {
			return 0, fmt.Errorf("enqueue: %w", notMigrated(err))
		}
		return int(tag.RowsAffected()), nil
	}
	for try := 0; ; try++ {
		tag, err := d.pool.Exec(ctx, query, args...)
		var pe *pgconn.PgError
		if try < uniqueTries && errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "23505" && pe.ConstraintName == "fenced_jobs_unique") {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("enqueue: %w", notMigrated(err))
		}
		return int(tag.RowsAffected()), nil
	}
}
