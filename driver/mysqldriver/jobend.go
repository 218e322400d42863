package mysqldriver

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// EndJobs ends a batch of attempts with a few statements whatever its
// size: the rows still current are locked (in id order; a single row is
// not, the UPDATE alone deciding), one UPDATE ends them all, each by its own
// kind and guarded by its own fence, and one INSERT records the ended
// attempts. A batch of completions is one single-table UPDATE
// (endCompletesSQL); any other batch's ends travel as one JSON document,
// read as a table by JSON_TABLE (MySQL 8.0.4, MariaDB 10.6), which the
// server plans far faster than a derived table of literal rows (SELECT …
// UNION ALL …; docs/design.md §10, measurements).

// endsTableSQL reads the ends' document (endsTable) as a table. Text travels
// as JSON strings, so that an output keeps its bytes; a JSON null is NULL.
const endsTableSQL = `JSON_TABLE(?, '$[*]' COLUMNS (
    id BIGINT PATH '$.id', fence BIGINT PATH '$.fence', kind VARCHAR(16) PATH '$.kind',
    output LONGTEXT PATH '$.output', error LONGTEXT PATH '$.error', delay_us BIGINT PATH '$.delay_us',
    discard INT PATH '$.discard', base_us BIGINT PATH '$.base_us', max_us BIGINT PATH '$.max_us',
    jitter DOUBLE PATH '$.jitter'))`

// endJobsPickSQL locks the rows whose attempt is still current, in id order,
// as a heartbeat locks them. Parameters: the ids, then the (id, fence)
// pairs.
const endJobsPickSQL = `
SELECT id FROM fenced_jobs FORCE INDEX (PRIMARY) WHERE id IN (%s) AND ` + endPairsMatch + ` AND ` + jobGuard + `
ORDER BY id
FOR UPDATE`

// endJobsSQL ends the picked attempts. A failure retries (queued, run_at =
// now + delay) unless attempts are exhausted or it is discarded; one given
// a backoff (base_us not NULL) waits the backoff of its attempt (backoffUS)
// instead of delay_us. A snooze does not count against max_attempts. A job
// asked to cancel that fails or snoozes ends cancelled: the request is
// never lost. A completion clears the job's last error (the history keeps
// each attempt's). No assignment reads a column another one writes, so the
// order MySQL gives a multiple-table UPDATE's assignments does not matter.
// The statement's clock reading, at which it records the ends, is handed
// back (clockAsInsertID). Parameters: the ends' rows, then the picked ids.
var endJobsSQL = `
UPDATE fenced_jobs j FORCE INDEX (PRIMARY) JOIN %s e ON e.id = j.id SET
    j.state = CASE
        WHEN e.kind = 'complete' THEN 'succeeded'
        WHEN e.kind = 'cancel' OR j.cancel_requested THEN 'cancelled'
        WHEN e.kind = 'snooze' THEN 'queued'
        WHEN e.discard OR j.attempt >= j.max_attempts THEN 'failed'
        ELSE 'queued' END,
    j.finished_at = CASE
        WHEN e.kind IN ('complete', 'cancel') OR j.cancel_requested
            OR (e.kind = 'fail' AND (e.discard OR j.attempt >= j.max_attempts))
        THEN ` + now + ` END,
    j.output = CASE WHEN e.kind = 'complete' THEN e.output ELSE j.output END,
    j.last_error = CASE WHEN e.kind IN ('fail', 'cancel') THEN e.error WHEN e.kind = 'complete' THEN NULL
        ELSE j.last_error END,
    j.run_at = CASE WHEN e.kind IN ('fail', 'snooze') THEN ` + now + ` + INTERVAL CASE
            WHEN e.base_us IS NULL THEN e.delay_us
            ELSE ` + backoffUS("j.attempt", "e.base_us", "e.max_us", "e.jitter") + ` END MICROSECOND
        ELSE j.run_at END,
    j.max_attempts = CASE WHEN e.kind = 'snooze' THEN j.max_attempts + 1 ELSE j.max_attempts END,
    j.lease_expires_at = NULL,
    j.updated_at = ` + now + `
WHERE j.id IN (%s) AND ` + endFenceMatch + ` AND j.state = 'running' AND j.lease_expires_at > ` + now + `
    AND ` + fmt.Sprintf(taskFlagAsInsertID, "j.")

// endCompletesSQL ends a chunk whose ends are all completions, the common
// case, with a single-table UPDATE: the general statement's join with the
// ends' table costs MySQL a temporary table of the rows and a second pass
// (docs/design.md §10). The first %s is the output of each job
// (outputOf), the second the picked ids, the third their (id, fence)
// pairs; the guard is the general statement's. The statement's clock
// reading is handed back (clockAsInsertID).
var endCompletesSQL = `
UPDATE fenced_jobs FORCE INDEX (PRIMARY) SET
    state = 'succeeded', finished_at = ` + now + `, output = %s, last_error = NULL,
    lease_expires_at = NULL, updated_at = ` + now + `
WHERE id IN (%s) AND ` + endPairsMatch + ` AND ` + jobGuard + ` AND ` + taskFlagEnd

// taskFlagEnd is taskFlagAsInsertID of endCompletesSQL's unqualified row.
var taskFlagEnd = fmt.Sprintf(taskFlagAsInsertID, "")

// outputOf is the output expression of endCompletesSQL for ends[at...] and
// its arguments: NULL when no end has an output, else a CASE on the id.
func outputOf(ends []fencedtype.JobEnd, at []int) (string, []any) {
	var b strings.Builder
	var args []any
	for _, i := range at {
		if e := ends[i]; e.Output != nil {
			b.WriteString(" WHEN ? THEN ?")
			args = append(args, e.Ref.ID, string(e.Output))
		}
	}
	if len(args) == 0 {
		return "NULL", nil
	}
	return "CASE id" + b.String() + " END", args
}

// jobAttemptsSQL records the attempts just ended other than by a completion,
// read from the rows the ending statement left (updated_at is its clock reading). Parameters: the
// ends' rows, then the ended ids.
const jobAttemptsSQL = `
INSERT INTO fenced_job_attempts (job_id, attempt, fence, owner, started_at, ended_at, outcome, error)
SELECT j.id, j.attempt, j.fence, j.owner, j.attempted_at, j.updated_at,
    CASE WHEN e.kind = 'complete' THEN 'succeeded' WHEN j.state = 'cancelled' THEN 'cancelled'
         WHEN e.kind = 'snooze' THEN 'snoozed' WHEN j.state = 'failed' THEN 'failed' ELSE 'retry' END,
    NULLIF(e.error, '')
FROM fenced_jobs j FORCE INDEX (PRIMARY) JOIN %s e ON e.id = j.id
WHERE j.id IN (%s)`

// endJobsEndedSQL finds which locked rows the ending statement changed: every
// end takes a job out of running. A locking read: in the caller's
// REPEATABLE READ transaction a plain read shows its snapshot, where a job
// the statement left running may not be running yet.
const endJobsEndedSQL = `SELECT id FROM fenced_jobs FORCE INDEX (PRIMARY) WHERE id IN (%s) AND state <> 'running' LOCK IN SHARE MODE`

// Limits on one round of statements, kept well under max_allowed_packet
// (16 MiB on MariaDB, 64 MiB on MySQL) though every end carries 64 KiB of
// error text.
const (
	endChunkEnds  = 500
	endChunkBytes = 4 << 20
)

// EndJobs implements driver.JobDriver: in one transaction (or the
// caller's). A job whose end changed nothing is diagnosed in the same
// transaction, by locking reads: a replay of how its attempt ended
// included (driver.DiagnoseEnd).
//
// In a transaction of its own, a batch of completions first goes the
// optimistic way (optimisticEnds): when one of them no longer matches,
// that transaction is rolled back and the batch is ended again the
// careful way.
func (d *Driver) EndJobs(ctx context.Context, tx driver.Tx, ends []fencedtype.JobEnd) ([]error, []fencedtype.JobEnded, error) {
	if tx == nil {
		out, ended, err := driver.EndJobsIn(ctx, nil, ends, sqlOf, d.inTx, optimisticEnds(true).end)
		if !errors.Is(err, errEndsNotAllCurrent) {
			return out, ended, err
		}
	}
	return driver.EndJobsIn(ctx, tx, ends, sqlOf, d.inTx, optimisticEnds(false).end)
}

// errEndsNotAllCurrent stops an optimistic end of a batch of completions
// when the UPDATE matched fewer rows than it named: which ones it ended is
// not known without the locking read it skipped, so the transaction is
// rolled back and the batch ended again with that read first.
var errEndsNotAllCurrent = errors.New("a completion of the batch no longer matches its job")

// optimisticEnds says whether a chunk of several completions skips the
// locking read (endJobsPickSQL) and lets endCompletesSQL, guarded the same
// way and locking in the same id order, name all of them: when every one
// matches, the chunk took one statement instead of two. Only in a
// transaction of the driver's own, which can be rolled back and run again
// (errEndsNotAllCurrent).
type optimisticEnds bool

func (o optimisticEnds) end(ctx context.Context, tx *sql.Tx, ends []fencedtype.JobEnd) ([]error, []fencedtype.JobEnded, error) {
	return endJobs(ctx, tx, ends, bool(o))
}

// endJobs ends the jobs in rounds of distinct ids, in id order: a job
// named twice is ended by its first end, and its second finds it ended. It
// returns each end's error and how each end that held was recorded.
func endJobs(ctx context.Context, tx *sql.Tx, ends []fencedtype.JobEnd, optimistic bool) ([]error, []fencedtype.JobEnded, error) {
	out := make([]error, len(ends))
	answers := make([]fencedtype.JobEnded, len(ends))
	if len(ends) == 0 {
		return out, answers, nil
	}
	order := make([]int, len(ends))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ends[a].Ref.ID, ends[b].Ref.ID) })
	for len(order) > 0 {
		var round, again []int
		for k, i := range order {
			if k > 0 && ends[order[k-1]].Ref.ID == ends[i].Ref.ID {
				again = append(again, i)
			} else {
				round = append(round, i)
			}
		}
		for len(round) > 0 {
			n, size := 0, 0
			for n < len(round) && n < endChunkEnds && (n == 0 || size < endChunkBytes) {
				e := ends[round[n]]
				size += endSize(e)
				n++
			}
			if err := endChunk(ctx, tx, ends, round[:n], out, answers, optimistic); err != nil {
				return nil, nil, err
			}
			round = round[n:]
		}
		order = again
		// The ends of a later round name jobs an earlier one ended or
		// refused: the optimistic way would only miss and start over.
		optimistic = false
	}
	return out, answers, nil
}

// endChunk ends the attempts ends[at...] (distinct ids, ascending), and
// sets out[at...] to nil or the diagnosed error and answers[at...] to how
// each end that held was recorded.
func endChunk(ctx context.Context, tx *sql.Tx, ends []fencedtype.JobEnd, at []int, out []error, answers []fencedtype.JobEnded, optimistic bool) error {
	refs := make([]fencedtype.JobRef, len(at))
	kinds := make(map[int64]fencedtype.EndKind, len(at))
	picked := make([]int64, len(at))
	for k, i := range at {
		refs[k] = ends[i].Ref
		kinds[refs[k].ID] = ends[i].Kind
		picked[k] = refs[k].ID
	}
	completes := completesOnly(ends, at)
	// One row needs no lock first: there is no order to keep, and the UPDATE
	// matching it or not says whether it ended. Nor do optimistic
	// completions (optimisticEnds).
	optimistic = optimistic && completes && len(refs) > 1
	if len(refs) > 1 && !optimistic {
		query, args := withRefs(endJobsPickSQL, refs)
		var err error
		if picked, err = collectIDs(tx.QueryContext(ctx, query, args...)); err != nil {
			return err
		}
	}
	ended := picked
	var decided time.Time
	if len(picked) > 0 {
		var n int64
		var t time.Time
		var tasks bool
		var err error
		if completes {
			output, args := outputOf(ends, at)
			args = append(args, anys(picked)...)
			for _, id := range picked {
				args = append(args, id, fenceOf(refs, id))
			}
			n, t, tasks, err = execAtTask(ctx, tx, fmt.Sprintf(endCompletesSQL, output, placeholders(len(picked)), pairPlaceholders(len(picked))), args...)
		} else {
			var table string
			var rowArgs []any
			if table, rowArgs, err = endsTable(ends, at); err != nil {
				return err
			}
			args := append(rowArgs, anys(picked)...)
			n, t, tasks, err = execAtTask(ctx, tx, fmt.Sprintf(endJobsSQL, table, placeholders(len(picked))), args...)
		}
		if err != nil {
			return err
		}
		decided = t
		switch {
		case optimistic && n < int64(len(picked)):
			return errEndsNotAllCurrent
		case len(refs) == 1 && n == 0:
			ended = nil
		case n < int64(len(picked)):
			// A picked lease ran out between the two statements; the rows
			// are locked, so those still running are the ones not ended.
			if ended, err = collectIDs(tx.QueryContext(ctx, fmt.Sprintf(endJobsEndedSQL, placeholders(len(picked))), anys(picked)...)); err != nil {
				return err
			}
		}
		// A completed attempt stays on the row it leaves succeeded
		// (driver.WithRowAttempts): only the other ends get history rows.
		var recorded []int64
		for _, id := range ended {
			if kinds[id] != fencedtype.EndComplete {
				recorded = append(recorded, id)
			}
		}
		if len(recorded) > 0 {
			table, rowArgs, err := endsTable(ends, at)
			if err != nil {
				return err
			}
			args := append(rowArgs, anys(recorded)...)
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(jobAttemptsSQL, table, placeholders(len(recorded))), args...); err != nil {
				return fmt.Errorf("history: %w", err)
			}
		}
		// The release rule, in the end's transaction, for the rows it
		// ended: a stale end ended nothing and releases nothing.
		if tasks && len(ended) > 0 {
			if err := releaseEnded(ctx, tx, ended); err != nil {
				return err
			}
		}
	}
	done := make(map[int64]bool, len(ended))
	for _, id := range ended {
		done[id] = true
	}
	var missing []fencedtype.JobRef
	for k, i := range at {
		if done[refs[k].ID] {
			answers[i] = fencedtype.JobEnded{At: decided}
		} else {
			missing = append(missing, refs[k])
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return diagnoseEnds(ctx, tx, ends, at, done, missing, out, answers)
}

// endedAttemptsSQL reads the history entries of attempts, by their jobs'
// ids (a range of the primary key each) and (job, fence) pairs,
// share-locked: a plain read in the caller's REPEATABLE READ transaction
// would show its snapshot, which may predate the end that recorded one.
// The jobs' rows are share-locked already, so the entries' locks hold back
// nothing more.
const endedAttemptsSQL = `SELECT job_id, attempt, fence, owner, started_at, ended_at, outcome, COALESCE(error, '')
FROM fenced_job_attempts FORCE INDEX (PRIMARY) WHERE job_id IN (%s) AND (job_id, fence) IN (%s) LOCK IN SHARE MODE`

// diagnoseEnds answers the ends of ends[at...] that changed nothing (their
// jobs not in done; missing their attempts): a replay of how the attempt
// ended, or its refusal (driver.DiagnoseEnd). Its reads lock, in this
// transaction: what the caller's snapshot shows may be older.
func diagnoseEnds(ctx context.Context, tx *sql.Tx, ends []fencedtype.JobEnd, at []int, done map[int64]bool,
	missing []fencedtype.JobRef, out []error, answers []fencedtype.JobEnded) error {
	ids := make([]any, len(missing))
	for k, r := range missing {
		ids[k] = r.ID
	}
	cur, err := collectJobs(tx.QueryContext(ctx, `SELECT `+jobColumns+` FROM fenced_jobs j WHERE j.id IN (`+
		placeholders(len(missing))+`) LOCK IN SHARE MODE`, ids...))
	if err != nil {
		return fmt.Errorf("diagnose: %w", err)
	}
	byID := make(map[int64]*fencedtype.Job, len(cur))
	for _, j := range cur {
		byID[j.ID] = j
	}
	// The history entries of the attempts whose end was not a completion (a
	// completed attempt stays on its job's row).
	var pairs []fencedtype.JobRef
	for _, i := range at {
		if e := ends[i]; !done[e.Ref.ID] && e.Kind != fencedtype.EndComplete && byID[e.Ref.ID] != nil {
			pairs = append(pairs, e.Ref)
		}
	}
	attempts := make(map[fencedtype.JobRef]*fencedtype.JobAttempt, len(pairs))
	if len(pairs) > 0 {
		query, args := withRefs(endedAttemptsSQL, pairs)
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return fmt.Errorf("diagnose: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var a fencedtype.JobAttempt
			var owner []byte
			var started, ended dbTime
			if err := rows.Scan(&id, &a.Attempt, &a.Fence, &owner, &started, &ended, &a.Outcome, &a.Error); err != nil {
				return fmt.Errorf("diagnose: %w", err)
			}
			a.Owner, a.StartedAt, a.EndedAt = string(owner), started.Time, ended.ptr()
			attempts[fencedtype.JobRef{ID: id, Fence: a.Fence}] = &a
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("diagnose: %w", err)
		}
	}
	for _, i := range at {
		if e := ends[i]; !done[e.Ref.ID] {
			answers[i], out[i] = driver.DiagnoseEnd(e, byID[e.Ref.ID], attempts[e.Ref])
		}
	}
	return nil
}

// completesOnly says whether endCompletesSQL can end ends[at...]: every end
// is a completion and at most maxCaseOutputs of them carry an output (its CASE
// tries its branches one by one for every row, so a chunk of many outputs
// goes the general way, whose join finds each row's own).
func completesOnly(ends []fencedtype.JobEnd, at []int) bool {
	outputs := 0
	for _, i := range at {
		if ends[i].Kind != fencedtype.EndComplete {
			return false
		}
		if ends[i].Output != nil {
			outputs++
		}
	}
	return outputs <= maxCaseOutputs
}

// maxCaseOutputs bounds the branches of endCompletesSQL's output CASE.
const maxCaseOutputs = 32

// endRow is one end in the ends' document.
type endRow struct {
	ID      int64    `json:"id"`
	Fence   int64    `json:"fence"`
	Kind    string   `json:"kind"`
	Output  *string  `json:"output"`
	Error   string   `json:"error"`
	DelayUS int64    `json:"delay_us"`
	Discard int      `json:"discard"`
	BaseUS  *int64   `json:"base_us"` // no backoff: null
	MaxUS   *int64   `json:"max_us"`
	Jitter  *float64 `json:"jitter"`
}

// endsTable is the table of ends[at...] (endsTableSQL) and its one
// argument, the ends' JSON document.
func endsTable(ends []fencedtype.JobEnd, at []int) (string, []any, error) {
	rows := make([]endRow, len(at))
	for k, i := range at {
		e := ends[i]
		r := endRow{ID: e.Ref.ID, Fence: e.Ref.Fence, Kind: string(e.Kind), Error: e.Error,
			DelayUS: e.Delay.Microseconds()}
		if e.Output != nil {
			out := string(e.Output)
			r.Output = &out
		}
		if e.Discard {
			r.Discard = 1
		}
		if b := e.Backoff; b != nil {
			base, maxUS, jitter := b.Base.Microseconds(), b.Max.Microseconds(), b.Jitter
			r.BaseUS, r.MaxUS, r.Jitter = &base, &maxUS, &jitter
		}
		rows[k] = r
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return "", nil, fmt.Errorf("ends: %w", err)
	}
	return endsTableSQL, []any{string(doc)}, nil
}

// endSize bounds the bytes an end adds to the ends' document: JSON escapes
// a control character in six.
func endSize(e fencedtype.JobEnd) int { return 6*(len(e.Error)+len(e.Output)) + 200 }
