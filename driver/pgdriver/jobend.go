package pgdriver

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
)

// endJobsSQL ends attempts, each guarded by its own fence, and records each
// ended attempt in the history, all in one statement, except a completed
// one: the row it leaves succeeded holds that attempt (driver.WithRowAttempts). A failure retries
// (queued, run_at = now + delay) unless attempts are exhausted or it is
// discarded; a failure given a backoff (base_us not NULL) waits the backoff
// of its attempt (backoffUS) instead of delay_us. A snooze does not count
// against max_attempts. A job asked to cancel that fails or snoozes ends
// cancelled: the request is never lost. A completion clears the job's last error (the history keeps each
// attempt's). Each written end is reported with its position in the batch
// (ord): when two ends name one attempt, only the one the row was updated
// with is.
//
// The statement reads the clock once (n, a CTE: evaluated once) and
// records every end it writes at that reading: updated_at, finished_at,
// the history's ended_at and the base of run_at, which it reports. Each
// row's guard reads the clock itself (clock_timestamp() in jobGuard).
//
// An end that leaves its job no longer blocking its sequence (succeeded,
// cancelled, or failed with sequence_continue_on_failed) reports the job's
// queue as release_queue, and its sequence key (else NULL): EndJobs then
// releases the sequence's next job (releaseSequences).
//
// The fence check is endFenceMatch (j.fence = e.fence: the row's fence is
// the attempt's) and the reported fence endReportedFence (the row's fence),
// constants in fencecheck.go so that the chaos suite's deliberately broken
// build (fencecheck_broken.go) can drop them; jobGuard adds state running
// and an unexpired lease by clock_timestamp().
var endJobsTemplate = `
WITH n AS (
    SELECT clock_timestamp() AS at
), e AS (
    SELECT u.*, n.at
    FROM unnest((SELECT $1::bigint[]), (SELECT $2::bigint[]), (SELECT $3::text[]), (SELECT $4::jsonb[]), (SELECT $5::text[]), (SELECT $6::bigint[]), (SELECT $7::bool[]),
            (SELECT $8::bigint[]), (SELECT $9::bigint[]), (SELECT $10::float8[]))
        WITH ORDINALITY AS u(id, fence, kind, output, error, delay_us, discard, base_us, max_us, jitter, ord), n
), j AS (
    UPDATE fenced_jobs j SET
        state = CASE
            WHEN e.kind = 'complete' THEN 'succeeded'
            WHEN e.kind = 'cancel' OR j.cancel_requested THEN 'cancelled'
            WHEN e.kind = 'snooze' THEN 'queued'
            WHEN e.discard OR j.attempt >= j.max_attempts THEN 'failed'
            ELSE 'queued' END,
        finished_at = CASE
            WHEN e.kind IN ('complete', 'cancel') OR j.cancel_requested
                OR (e.kind = 'fail' AND (e.discard OR j.attempt >= j.max_attempts))
            THEN e.at END,
        output = CASE WHEN e.kind = 'complete' THEN e.output ELSE j.output END,
        last_error = CASE WHEN e.kind IN ('fail', 'cancel') THEN e.error WHEN e.kind = 'complete' THEN NULL
            ELSE j.last_error END,
        run_at = CASE WHEN e.kind IN ('fail', 'snooze') THEN e.at + interval '1 microsecond' * CASE
                WHEN e.base_us IS NULL THEN e.delay_us
                ELSE ` + backoffUS("j.attempt", "e.base_us", "e.max_us", "e.jitter") + ` END
            ELSE j.run_at END,
        max_attempts = CASE WHEN e.kind = 'snooze' THEN j.max_attempts + 1 ELSE j.max_attempts END,
        lease_expires_at = NULL,
        updated_at = e.at
    FROM e
    WHERE j.id = e.id AND ` + endFenceMatch + ` AND ` + jobGuard + ` %[1]s
    RETURNING j.id, j.attempt, j.fence, j.owner, j.attempted_at, j.state, e.kind, e.error, e.fence AS ended_fence, e.ord, e.at,
        CASE WHEN j.sequence_key IS NOT NULL
            AND (j.state IN ('succeeded', 'cancelled') OR (j.state = 'failed' AND j.sequence_continue_on_failed))
            THEN j.queue END AS release_queue, j.sequence_key, j.dependents, j.queue
), h AS (
    INSERT INTO fenced_job_attempts (job_id, attempt, fence, owner, started_at, ended_at, outcome, error)
    SELECT id, attempt, fence, owner, attempted_at, at,
        CASE WHEN kind = 'complete' THEN 'succeeded' WHEN state = 'cancelled' THEN 'cancelled'
             WHEN kind = 'snooze' THEN 'snoozed' WHEN state = 'failed' THEN 'failed' ELSE 'retry' END,
        NULLIF(error, '')
    FROM j WHERE kind <> 'complete'
)%[2]s
SELECT id, ` + endReportedFence + `, ord, at, release_queue, sequence_key%[3]s FROM j%[4]s`

// releaseDependentsSQL is the release rule (docs/design.md §6.18) after the
// successes of an end statement's CTE j (its rows' state and dependents):
// fenced_workflow_done (migration 22) counts each succeeded task's
// dependents down and queues those left with nothing to wait for. rn is
// one row, joined to the statement's result so that it runs, and calls
// the function only when a task with dependents succeeded. It reads the
// dependents from j, the rows the statement itself locked and updated, so
// one that AddWorkflowTasks added meanwhile (it locks and updates the
// dependency's row) is among them, and the function's statement, with a
// snapshot of its own, sees its row. (Failures, cancels and retries are the
// fenced_workflow_step trigger's.)
const releaseDependentsSQL = `rn AS (
    SELECT CASE WHEN edges IS NOT NULL THEN fenced_workflow_done(edges) END AS released
    FROM (SELECT array_agg(d.id) AS edges FROM j, unnest(j.dependents) AS d(id) WHERE j.state = 'succeeded') r
)`

// takeDependentsSQL is releaseDependentsSQL with the hand-off
// (fenced_workflow_release, migrations 23 and 24): each completion is a
// taker, in its queue, by its position in the batch, and a dependent it
// releases may start at once for owner $first, with a lease of $first+1
// microseconds, when of one of the kinds $first+2; up to $first+4[i] more
// may start in the spare slots of queue $first+3[i] (taker 0). rn is one
// row, the started tasks' ids, fences and takers, which the statement
// returns as a row of its own (ord 0, takeTail).
func takeDependentsSQL(first int) string {
	return fmt.Sprintf(`rn AS (
    SELECT d.taken, d.taken_fences, d.taken_by
    FROM (SELECT array_agg(d.id) AS edges, array_agg(j.ord::integer) AS takers, array_agg(j.queue) AS queues
        FROM j, unnest(j.dependents) AS d(id) WHERE j.state = 'succeeded') r,
        LATERAL fenced_workflow_release(r.edges, r.takers, r.queues, $%d::text, $%d::bigint, $%d::text[], $%d::text[], $%d::integer[]) d
    WHERE r.edges IS NOT NULL
)`, first, first+1, first+2, first+3, first+4)
}

// takeColumns and takeTail complete a taking end statement's result: the
// ended rows with three empty columns, then rn's row (ord 0).
const (
	takeColumns = `, NULL::bigint[] AS taken, NULL::bigint[] AS taken_fences, NULL::integer[] AS taken_by`
	takeTail    = `
UNION ALL
SELECT 0, 0, 0, clock_timestamp(), NULL, NULL, taken, taken_fences, taken_by FROM rn`
)

// endCompletesSQL is endJobsSQL for a batch of completions only, the
// common case: the same guard, clock reading and report, without the
// columns, cases and history a completion does not need (cheaper a job:
// docs/design.md §10, measurements).
var endCompletesTemplate = `
WITH n AS (
    SELECT clock_timestamp() AS at
), e AS (
    SELECT u.*, n.at
    FROM unnest((SELECT $1::bigint[]), (SELECT $2::bigint[]), (SELECT $3::jsonb[])) WITH ORDINALITY AS u(id, fence, output, ord), n
), j AS (
    UPDATE fenced_jobs j SET
        state = 'succeeded', finished_at = e.at, output = e.output, last_error = NULL,
        lease_expires_at = NULL, updated_at = e.at
    FROM e
    WHERE j.id = e.id AND ` + endFenceMatch + ` AND ` + jobGuard + ` %[1]s
    RETURNING j.id, j.fence, e.fence AS ended_fence, e.ord, e.at,
        CASE WHEN j.sequence_key IS NOT NULL THEN j.queue END AS release_queue, j.sequence_key, j.dependents, j.state, j.queue
)%[2]s
SELECT id, ` + endReportedFence + `, ord, at, release_queue, sequence_key%[3]s FROM j%[4]s`

// The end statements, each in two forms (endVariants): for jobs without
// dependents, and for the ends the first did not write, releasing the
// dependents of the tasks they complete.
var (
	endJobsSQL, endJobsReleaseSQL, endJobsTakeSQL                = endVariants(endJobsTemplate, 11)
	endCompletesSQL, endCompletesReleaseSQL, endCompletesTakeSQL = endVariants(endCompletesTemplate, 4)
)

// endVariants fills an end statement's template: plain writes only rows
// without dependents (dependents IS NULL: every job that is no workflow's
// task, and a task nothing depends on), so that the statement every plain
// batch runs carries nothing of the release (measured: the release CTE in
// it cost a plain burn-down 7%); release writes any row and releases
// (releaseDependentsSQL); take writes any row and releases with the
// hand-off (takeDependentsSQL, its parameters from first on).
func endVariants(template string, first int) (plain, release, take string) {
	return fmt.Sprintf(template, "AND j.dependents IS NULL", "", "", ""),
		fmt.Sprintf(template, "", ", "+releaseDependentsSQL, "", ", rn"),
		fmt.Sprintf(template, "", ", "+takeDependentsSQL(first), takeColumns, takeTail)
}

// EndJobs implements driver.JobDriver: one statement ends the batch,
// except a task with dependents, which a second statement ends (with what
// the first did not write: endVariants); an end neither wrote is diagnosed
// after them, a replay of how its attempt ended included (diagnoseEnds).
func (d *Driver) EndJobs(ctx context.Context, tx driver.Tx, ends []fencedtype.JobEnd) ([]error, []fencedtype.JobEnded, error) {
	errs, answers, _, _, err := d.endJobs(ctx, tx, ends, nil)
	return errs, answers, err
}

var _ driver.TaskHandoff = (*Driver)(nil)

// EndJobsHandingOff implements driver.TaskHandoff: EndJobs, whose
// releasing statement is the taking one (takeDependentsSQL), and then one
// read of the attempts it handed off.
func (d *Driver) EndJobsHandingOff(ctx context.Context, ends []fencedtype.JobEnd, h driver.Handoff) ([]error, []fencedtype.JobEnded, []*fencedtype.Job, []*fencedtype.Job, error) {
	return d.endJobs(ctx, nil, ends, &h)
}

// endJobs is EndJobs, with the hand-off to h when it is non-nil (and tx
// nil).
func (d *Driver) endJobs(ctx context.Context, tx driver.Tx, ends []fencedtype.JobEnd, h *driver.Handoff) ([]error, []fencedtype.JobEnded, []*fencedtype.Job, []*fencedtype.Job, error) {
	// Rows are locked in id order, as the heartbeat locks them: no deadlock.
	// order[k] is the end sent k-th; the statement reports each end it wrote
	// by that position, so two ends of one attempt are never both reported
	// written when only one could be.
	n := len(ends)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ends[a].Ref.ID, ends[b].Ref.ID) })
	ids, fences, kinds := make([]int64, n), make([]int64, n), make([]string, n)
	outputs, errs, delays, discards := make([]*string, n), make([]string, n), make([]int64, n), make([]bool, n)
	bases, maxes, jitters := make([]*int64, n), make([]int64, n), make([]float64, n)
	complete := true
	for i, at := range order {
		e := ends[at]
		complete = complete && e.Kind == fencedtype.EndComplete
		ids[i], fences[i], kinds[i] = e.Ref.ID, e.Ref.Fence, string(e.Kind)
		if e.Output != nil {
			s := string(e.Output)
			outputs[i] = &s
		}
		errs[i], delays[i], discards[i] = e.Error, e.Delay.Microseconds(), e.Discard
		if b := e.Backoff; b != nil {
			base := b.Base.Microseconds()
			bases[i], maxes[i], jitters[i] = &base, b.Max.Microseconds(), b.Jitter
		}
	}
	var q querier = d.pool
	var ptx pgx.Tx
	if tx != nil {
		var err error
		if ptx, err = pgxOf(tx); err != nil {
			return nil, nil, nil, nil, err
		}
		q = ptx
	}
	written := make([]bool, n)
	answers := make([]fencedtype.JobEnded, n)
	var releases []seqRelease
	var handed handedOff
	var spareQueues []string
	var spareSlots []int32
	if h != nil {
		for _, q := range slices.Sorted(maps.Keys(h.Spare)) {
			if k := h.Spare[q]; k > 0 {
				spareQueues, spareSlots = append(spareQueues, q), append(spareSlots, int32(k))
			}
		}
	}
	// exec runs one end statement and marks the ends it wrote (their
	// answers, the sequences to release) in written, answers and rel, and
	// the attempts the taking statement handed off in ho.
	exec := func(plain bool, written []bool, answers []fencedtype.JobEnded, rel *[]seqRelease, ho *handedOff) error {
		clear(written)
		clear(answers)
		*rel = (*rel)[:0]
		*ho = handedOff{}
		var rows pgx.Rows
		var err error
		args := []any{ids, fences, outputs}
		if !complete {
			args = []any{ids, fences, kinds, outputs, errs, delays, discards, bases, maxes, jitters}
		}
		take := !plain && h != nil
		if take {
			args = append(args, h.Owner, h.TTL.Microseconds(), h.Kinds, spareQueues, spareSlots)
		}
		switch {
		case complete && plain:
			rows, err = q.Query(ctx, endCompletesSQL, args...)
		case complete && take:
			rows, err = q.Query(ctx, endCompletesTakeSQL, args...)
		case complete:
			rows, err = q.Query(ctx, endCompletesReleaseSQL, args...)
		case plain:
			rows, err = q.Query(ctx, endJobsSQL, args...)
		case take:
			rows, err = q.Query(ctx, endJobsTakeSQL, args...)
		default:
			rows, err = q.Query(ctx, endJobsReleaseSQL, args...)
		}
		if err != nil {
			return err
		}
		var ref fencedtype.JobRef
		var ord int
		var at time.Time
		var rq, rk *string
		var hid, hfence []int64
		var hby []int32
		dest := []any{&ref.ID, &ref.Fence, &ord, &at, &rq, &rk}
		if take {
			dest = append(dest, &hid, &hfence, &hby)
		}
		_, err = pgx.ForEachRow(rows, dest, func() error {
			if take && ord == 0 { // rn's row: the attempts handed off
				if len(hid) != len(hfence) || len(hid) != len(hby) {
					return fmt.Errorf("end jobs handed off %d attempts with %d fences and %d takers", len(hid), len(hfence), len(hby))
				}
				*ho = handedOff{ids: hid, fences: hfence, by: hby}
				return nil
			}
			if ord < 1 || ord > n {
				return fmt.Errorf("end jobs reported end %d of %d", ord, n)
			}
			if i := order[ord-1]; ends[i].Ref == ref {
				written[i] = true
				answers[i] = fencedtype.JobEnded{At: at}
			}
			if rq != nil && rk != nil {
				*rel = append(*rel, seqRelease{queue: *rq, key: *rk, after: ref.ID})
			}
			return nil
		})
		return err
	}
	run := func(fn func() error) error {
		if tx != nil {
			return fn() // a deadlock aborts the caller's transaction: not ours to retry
		}
		return retryDeadlock(ctx, fn)
	}
	// A batch that hands off holds a task's completion (the worker asks
	// only then): the taking statement ends it all, alone.
	var err error
	if h == nil {
		err = run(func() error { return exec(true, written, answers, &releases, &handed) })
	}
	if err == nil && slices.Contains(written, false) {
		// A task with dependents, or an end that will be diagnosed: the
		// releasing statement ends what the first did not write.
		more, moreAnswers := make([]bool, n), make([]fencedtype.JobEnded, n)
		var moreReleases []seqRelease
		err = run(func() error { return exec(false, more, moreAnswers, &moreReleases, &handed) })
		for i := range more {
			if more[i] {
				written[i], answers[i] = true, moreAnswers[i]
			}
		}
		releases = append(releases, moreReleases...)
	}
	if err == nil && tx != nil {
		err = releaseSequencesIn(ctx, ptx, releases)
	} else if err == nil {
		_ = d.releaseSequences(ctx, releases) // the ends committed; a head left held is the sweep's (jobhold.go)
	}
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("end jobs: %w", err)
	}
	var taken, spare []*fencedtype.Job
	if h != nil {
		taken = make([]*fencedtype.Job, n)
		if spare, err = d.readHandedOff(ctx, handed, h.Owner, order, taken); err != nil {
			// The ends committed: what was handed off runs when recovery
			// puts it back (driver.TaskHandoff).
			clear(taken)
			spare = nil
		}
	}
	out, err := diagnoseEnds(ctx, q, ends, written, answers, tx != nil)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return out, answers, taken, spare, nil
}

// handedOff is what a taking end statement handed off: the started tasks'
// ids and fences, and each one's taker (its end's position in the
// statement, from 1; 0 for a spare slot's).
type handedOff struct {
	ids, fences []int64
	by          []int32
}

// readHandedOffSQL reads the attempts handed off ($1 ids) that are still
// owner's ($2) and running (readHandedOff checks their fences).
const readHandedOffSQL = `SELECT ` + jobColumns + `
FROM fenced_jobs j WHERE j.id = ANY($1::bigint[]) AND j.state = 'running' AND j.owner = $2`

// readHandedOff reads the attempts of ho into taken, each at the end
// (order maps a position in the statement to the end) that took it, and
// returns those of the spare slots. An attempt no longer running under its
// fence (already lost) is left out.
func (d *Driver) readHandedOff(ctx context.Context, ho handedOff, owner string, order []int, taken []*fencedtype.Job) (spare []*fencedtype.Job, err error) {
	if len(ho.ids) == 0 {
		return nil, nil
	}
	jobs, err := collectJobs(d.pool.Query(ctx, readHandedOffSQL, ho.ids, owner))
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]*fencedtype.Job, len(jobs))
	for _, j := range jobs {
		byID[j.ID] = j
	}
	for k, id := range ho.ids {
		j, by := byID[id], int(ho.by[k])
		switch {
		case j == nil || j.Fence != ho.fences[k]:
		case by == 0:
			spare = append(spare, j)
		case by <= len(order):
			taken[order[by-1]] = j
		}
	}
	return spare, nil
}

// endedAttemptsSQL reads the history entries of attempts by (job, fence):
// $1 the jobs' ids, $2 the fences.
const endedAttemptsSQL = `SELECT h.job_id, h.attempt, h.fence, h.owner, h.started_at, h.ended_at, h.outcome, COALESCE(h.error, '')
FROM unnest($1::bigint[], $2::bigint[]) AS u(id, fence)
JOIN fenced_job_attempts h ON h.job_id = u.id AND h.fence = u.fence`

// diagnoseEnds answers each end that did not take effect (driver.DiagnoseEnd):
// a replay of how its attempt ended, into answers, or its typed error,
// from the job rows and the attempts' history entries read through q (the
// caller's transaction when there is one). In the caller's transaction the
// job rows are share-locked first: a REPEATABLE READ or SERIALIZABLE
// snapshot may predate a heartbeat, a new claim or another end of the
// attempt (the end then matched nothing in the snapshot), and a locking
// read of a row changed since fails with a serialization error the caller
// can retry, instead of diagnosing the old version. Without one, the reads
// come after the ending statement, which waited for any other end of the
// same attempt in flight: the end it did not write is settled (see
// driver.DiagnoseEnd), and the reads see how.
func diagnoseEnds(ctx context.Context, q querier, ends []fencedtype.JobEnd, ok []bool, answers []fencedtype.JobEnded, lock bool) ([]error, error) {
	out := make([]error, len(ends))
	var missing, ids, fences []int64
	for i, e := range ends {
		if ok[i] {
			continue
		}
		missing = append(missing, e.Ref.ID)
		if e.Kind != fencedtype.EndComplete { // a completed attempt stays on its job's row
			ids, fences = append(ids, e.Ref.ID), append(fences, e.Ref.Fence)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	read := `SELECT ` + jobColumns + ` FROM fenced_jobs j WHERE j.id = ANY($1)`
	if lock {
		read += ` ORDER BY j.id FOR SHARE`
	}
	cur, err := collectJobs(q.Query(ctx, read, missing))
	if err != nil {
		return nil, fmt.Errorf("diagnose jobs: %w", err)
	}
	byID := make(map[int64]*fencedtype.Job, len(cur))
	for _, j := range cur {
		byID[j.ID] = j
	}
	attempts := make(map[fencedtype.JobRef]*fencedtype.JobAttempt, len(ids))
	if len(ids) > 0 {
		rows, err := q.Query(ctx, endedAttemptsSQL, ids, fences)
		if err != nil {
			return nil, fmt.Errorf("diagnose jobs: %w", err)
		}
		var id int64
		var a fencedtype.JobAttempt
		_, err = pgx.ForEachRow(rows, []any{&id, &a.Attempt, &a.Fence, &a.Owner, &a.StartedAt, &a.EndedAt, &a.Outcome, &a.Error}, func() error {
			got := a
			if a.EndedAt != nil { // a copy: the next row is scanned into a
				t := *a.EndedAt
				got.EndedAt = &t
			}
			attempts[fencedtype.JobRef{ID: id, Fence: a.Fence}] = &got
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("diagnose jobs: %w", err)
		}
	}
	for i, e := range ends {
		if !ok[i] {
			answers[i], out[i] = driver.DiagnoseEnd(e, byID[e.Ref.ID], attempts[e.Ref])
		}
	}
	return out, nil
}
