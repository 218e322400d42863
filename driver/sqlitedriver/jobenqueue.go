package sqlitedriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// enqueueSQL enqueues one job. A job whose idempotency key exists already
// (committed before, or earlier in the same batch) is skipped here and read
// back with jobByKeySQL in the same transaction. It is skipped by NOT
// EXISTS before the insert, not only by ON CONFLICT: with AUTOINCREMENT, a
// row that conflicts still advances the table's id sequence, so every
// repeat would consume an id. (The write lock is held, so no other writer
// inserts the key between the check and the insert; ON CONFLICT stays as
// the guarantee.) Parameters: ?1 kind,
// ?2 queue, ?3 args, ?4 priority, ?5 run_at_us or NULL, ?6 delay_us,
// ?7 max_attempts, ?8 idempotency key (empty for none), ?9 concurrency key
// and ?10 sequence key (empty for none), ?11 sequence_continue_on_failed,
// ?12 metadata or NULL, ?13 policy or NULL, ?14 tags (a JSON array)
// or NULL.
const enqueueSQL = `
INSERT INTO fenced_jobs (kind, queue, args, priority, run_at_us, max_attempts, idempotency_key,
    concurrency_key, sequence_key, sequence_continue_on_failed, metadata, created_us, updated_us,
    policy, tags)
SELECT ?1, ?2, ?3, ?4, COALESCE(?5, ` + nowUS + ` + ?6), ?7, NULLIF(?8, ''),
    NULLIF(?9, ''), NULLIF(?10, ''), ?11, ?12, ` + nowUS + `, ` + nowUS + `,
    ?13, ?14
WHERE NOT EXISTS (SELECT 1 FROM fenced_jobs e WHERE e.idempotency_key = NULLIF(?8, ''))
ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING ` + jobColumns

// enqueueArgs are enqueueSQL's parameters ?1 to ?14 for in.
func enqueueArgs(in driver.EnqueueParams) []any {
	var runAt any
	if !in.RunAt.IsZero() {
		runAt = in.RunAt.UnixMicro()
	}
	var meta, policy any // NULL
	if in.Metadata != nil {
		meta = string(in.Metadata)
	}
	if in.Policy != nil {
		policy = string(in.Policy)
	}
	return []any{in.Kind, in.Queue, string(in.Args), in.Priority,
		runAt, in.Delay.Microseconds(), in.MaxAttempts, in.IdempotencyKey,
		in.ConcurrencyKey, in.SequenceKey, in.SequenceContinueOnFailed, meta,
		policy, tagsJSON(in.Tags)}
}

const jobByKeySQL = `SELECT ` + jobColumns + ` FROM fenced_jobs WHERE idempotency_key = ?1`

// Enqueue implements driver.JobDriver: one write transaction (or the
// caller's, whose write lock it already holds) inserting the jobs in input
// order, so their ids ascend in it.
func (d *Driver) Enqueue(ctx context.Context, tx driver.Tx, jobs []driver.EnqueueParams) ([]fencedtype.EnqueueResult, error) {
	var out []fencedtype.EnqueueResult
	var err error
	if tx != nil {
		var stx *sql.Tx
		if stx, err = sqlOf(tx); err != nil {
			return nil, err
		}
		out, err = insertJobs(ctx, stx, jobs)
	} else {
		err = d.writeTx(ctx, func(tx *sql.Tx) (err error) {
			out, err = insertJobs(ctx, tx, jobs)
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", notMigrated(err))
	}
	return out, nil
}

func insertJobs(ctx context.Context, tx *sql.Tx, jobs []driver.EnqueueParams) ([]fencedtype.EnqueueResult, error) {
	if hasUnique(jobs) {
		return insertUnique(ctx, tx, jobs)
	}
	stmt, err := tx.PrepareContext(ctx, enqueueSQL)
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	out := make([]fencedtype.EnqueueResult, len(jobs))
	for i, in := range jobs {
		j, err := scanJob(stmt.QueryRowContext(ctx, enqueueArgs(in)...))
		if err == nil {
			out[i].Job = j
			continue
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		j, err = scanJob(tx.QueryRowContext(ctx, jobByKeySQL, in.IdempotencyKey))
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("idempotency key %q conflicted but its job was not found", in.IdempotencyKey)
		}
		if err != nil {
			return nil, fmt.Errorf("read existing key %q: %w", in.IdempotencyKey, err)
		}
		out[i] = fencedtype.EnqueueResult{Job: j, Existing: true}
	}
	return out, nil
}

// tagsJSON is tags as stored: a JSON array, or nil (NULL) for none.
func tagsJSON(tags []string) any {
	if len(tags) == 0 {
		return nil
	}
	b, _ := json.Marshal(tags) // []string always encodes
	return string(b)
}
