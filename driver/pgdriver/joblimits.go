package pgdriver

import (
	"context"
	"errors"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// claimLimitedPickSQL picks and locks the candidates of a limited claim:
// eligible queued jobs in claim order whose sequence is not blocked by the
// snapshot of this statement and, in the pick with full keys, whose
// concurrency key is not among the full ones, skipping rows other claimers
// hold; none when the queue is paused (queueNotPausedPG). The first %s is
// the full keys' CTE or nothing, the second whether any key is full (false
// when they are not read), the third the kind filter ($3), the fourth the
// pre-filter (claimablePG). Parameters: $1 queue, $2 window.
const claimLimitedPickSQL = `
WITH RECURSIVE ` + sequenceHeadsSQL + `%s
SELECT j.id, j.kind, COALESCE(j.concurrency_key, ''), COALESCE(j.sequence_key, ''), %s FROM fenced_jobs j
WHERE j.state = 'queued' AND j.queue = $1 AND j.run_at <= clock_timestamp()%s
    AND ` + queueNotPausedPG + `
    AND %s
ORDER BY j.priority, j.run_at, j.id
LIMIT $2
FOR UPDATE OF j SKIP LOCKED`

// limitedPick is claimLimitedPickSQL with kind filter kinds, with or
// without the full keys.
func limitedPick(kinds string, full bool) string {
	if full {
		return fmt.Sprintf(claimLimitedPickSQL, ",\n"+driver.FullKeysCTE, "EXISTS (SELECT 1 FROM full_keys)", kinds, claimablePG(true))
	}
	return fmt.Sprintf(claimLimitedPickSQL, "", "false", kinds, claimablePG(false))
}

// sequenceHeadsSQL finds the head of each sequence of queue $1: its
// queued job of the lowest id, the only one of its jobs that may be
// unblocked (any later queued job waits for it). sequence_keys walks the
// distinct keys of open sequences in fenced_jobs_sequence, one index
// descent per key (a loose index scan), up to sequenceHeadsMax of them;
// sequence_heads is each key's first queued job. The pick then tests a
// sequenced job against this set, hashed, instead of probing its sequence
// for each: a long sequence's blocked jobs cost a lookup each, not an index
// search. When a queue has more open sequences than the walk takes
// (sequence_heads_all false), a sequenced job outside the set is tested as
// before (driver.JobSequenceBlockedSQL), so none is skipped.
const sequenceHeadsSQL = `sequence_keys(k, n) AS (
    (SELECT s.sequence_key, 1 FROM fenced_jobs s
        WHERE s.queue = $1 AND s.sequence_key IS NOT NULL AND s.state IN ('queued', 'running', 'failed')
        ORDER BY s.sequence_key LIMIT 1)
    UNION ALL
    SELECT (SELECT s.sequence_key FROM fenced_jobs s
            WHERE s.queue = $1 AND s.sequence_key > sequence_keys.k AND s.state IN ('queued', 'running', 'failed')
            ORDER BY s.sequence_key LIMIT 1), sequence_keys.n + 1
    FROM sequence_keys WHERE sequence_keys.k IS NOT NULL AND sequence_keys.n <= ` + sequenceHeadsMax + `
),
sequence_heads AS (
    SELECT (SELECT h.id FROM fenced_jobs h
            WHERE h.queue = $1 AND h.sequence_key = sequence_keys.k AND h.state = 'queued'
            ORDER BY h.id LIMIT 1) AS id
    FROM sequence_keys WHERE sequence_keys.k IS NOT NULL AND sequence_keys.n <= ` + sequenceHeadsMax + `
),
sequence_heads_all AS (
    SELECT NOT EXISTS (SELECT 1 FROM sequence_keys WHERE k IS NOT NULL AND n > ` + sequenceHeadsMax + `) AS yes
),
` + runningSequencesSQL

// runningSequencesSQL lists the sequences of queue $1 with a running job:
// read once, from the running rows, and used as a hashed set by
// sequenceBlockedPG.
const runningSequencesSQL = `running_sequences AS (
    SELECT DISTINCT r.sequence_key FROM fenced_jobs r
    WHERE r.state = 'running' AND r.queue = $1 AND r.sequence_key IS NOT NULL
)`

// sequenceBlockedPG is driver.JobSequenceBlockedSQL for the job row aliased
// j with a sequence key, in two parts an index serves: its sequence has a
// running job (running_sequences), or an earlier job of it (a range of
// fenced_jobs_sequence below j's id) is queued, running, or failed without
// sequence_continue_on_failed. The single probe of the shared form must
// read the whole open sequence to rule out a running job after j.
const sequenceBlockedPG = `(j.sequence_key IN (SELECT sequence_key FROM running_sequences)
        OR EXISTS (SELECT 1 FROM fenced_jobs s
            WHERE s.queue = j.queue AND s.sequence_key = j.sequence_key AND s.state IN ('queued', 'running', 'failed')
            AND s.id < j.id AND (s.state <> 'failed' OR NOT s.sequence_continue_on_failed)))`

// sequenceHeadsMax is how many sequences a pick's walk takes: two index
// descents each, on every limited claim of the queue.
const sequenceHeadsMax = "500"

// claimablePG is the pick's pre-filter (driver.JobClaimableSQL with the
// sequence heads and, with full, the full keys as sets, driver.FullKeysCTE
// and FullKeysTestSQL). Read before the locks, it only saves picking jobs
// that cannot be admitted: a sequenced job passes only if it is a head (or
// the walk did not take every sequence) and its sequence is not blocked. The deliberately broken build
// filters nothing.
func claimablePG(full bool) string {
	if !driver.LimitsEnforced {
		return `1 = 1`
	}
	f := `(j.sequence_key IS NULL OR (
        (j.id IN (SELECT id FROM sequence_heads WHERE id IS NOT NULL) OR NOT (SELECT yes FROM sequence_heads_all))
        AND NOT ` + sequenceBlockedPG + `))`
	if full {
		f += `
    AND (j.concurrency_key IS NULL OR (` + driver.FullKeysTestSQL + `))`
	}
	return f
}

// The limited pick of each kind filter, with the full keys and without.
var (
	claimLimitedPickAnyKindSQL = limitedPick("", true)
	claimLimitedPickOneKindSQL = limitedPick(" AND j.kind = $3", true)
	claimLimitedPickOfKindsSQL = limitedPick(" AND j.kind = ANY($3::text[])", true)

	claimLimitedPickAnyKindNoFullSQL = limitedPick("", false)
	claimLimitedPickOneKindNoFullSQL = limitedPick(" AND j.kind = $3", false)
	claimLimitedPickOfKindsNoFullSQL = limitedPick(" AND j.kind = ANY($3::text[])", false)
)

// claimLimitLocksSQL takes the transaction-scoped advisory locks of a
// limited claim, in the order of the array ($1, sorted by the caller): the
// function scan returns the elements in array order and the aggregate
// takes each as it comes. Held until the transaction ends.
const claimLimitLocksSQL = `SELECT count(pg_advisory_xact_lock(k)) FROM unnest($1::bigint[]) AS k`

// claimLimitBlockedSQL reads, after the locks, which of the locked
// sequenced candidates ($2, of queue $1) are blocked by their sequence.
var claimLimitBlockedSQL = `
WITH ` + runningSequencesSQL + `
SELECT j.id FROM fenced_jobs j WHERE j.id = ANY($2::bigint[]) AND ` + sequenceBlockedPG

// claimLimitRunningSQL counts the running attempts of each concurrency key
// of $2 in queue $1. Expired attempts not yet recovered count
// (driver.JobKeyRunningSQL).
const claimLimitRunningSQL = `
SELECT r.concurrency_key, count(*) FROM fenced_jobs r
WHERE r.state = 'running' AND r.queue = $1 AND r.concurrency_key = ANY($2::text[])
GROUP BY r.concurrency_key`

// claimLimitedStartSQL starts the admitted candidates, queued rows of queue
// $1 the claim holds locked since its pick: they are found by their
// primary key alone (a state condition would invite a partial index).
// Parameters: $1 queue, $2 owner, $3 the ids, $4 ttl_us (as jobStartSet
// numbers them).
const claimLimitedStartSQL = `
UPDATE fenced_jobs j SET ` + jobStartSet + `
WHERE j.id = ANY($3::bigint[]) AND j.queue = $1
RETURNING ` + jobColumns

// claimLimitedAdmitSQL admits and starts, in one statement, the locked
// candidates of a limited claim of a queue without global limits: sent
// after the advisory locks, in a new statement, it reads the keys' running
// attempts and limits and the sequences' state in a snapshot taken after
// them, and admits as driver.AdmitClaims does:
//
//   - a sequenced candidate only if it is the first of its sequence among
//     the candidates and its sequence is not blocked (sequenceBlockedPG);
//   - of the rest, a keyed candidate whose key's limit (the key's own,
//     else its kind's default, else the queue's: driver.KeyLimits) is
//     declared only while its rank among its key's candidates, added to
//     the key's running attempts, stays within the limit;
//   - the first $8 of those in claim order.
//
// The rank stands for the candidates admitted before it only when the
// candidates of a key share one limit. When a key's candidates have
// different limits (kinds with different defaults, or with and without
// one, and no own limit of the key) the statement starts nothing and
// returns one row with mixed true: the claim then admits in Go
// (driver.AdmitClaims) on load read afresh, still under the locks.
// Otherwise it returns the started jobs with mixed false.
//
// The candidates' kinds and keys come from the pick ($5, $6, $7, empty for
// none, in the order of the ids $3, which is claim order): the rows are
// locked since, so they cannot have changed. Parameters: $1 queue, $2
// owner, $3 ids, $4 ttl_us (as jobStartSet numbers them), $5 kinds, $6
// concurrency keys, $7 sequence keys, $8 the most jobs to start.
var claimLimitedAdmitSQL = `
WITH ` + runningSequencesSQL + `,
c AS (
    SELECT u.id, u.ord, u.kind, NULLIF(u.ckey, '') AS ckey, NULLIF(u.skey, '') AS skey,
        row_number() OVER (PARTITION BY NULLIF(u.skey, '') ORDER BY u.ord) AS seq_rank
    FROM unnest($3::bigint[], $5::text[], $6::text[], $7::text[]) WITH ORDINALITY AS u(id, kind, ckey, skey, ord)
),
running AS (
    SELECT r.concurrency_key AS ckey, count(*) AS n FROM fenced_jobs r
    WHERE r.state = 'running' AND r.queue = $1 AND r.concurrency_key IS NOT NULL
    GROUP BY r.concurrency_key
),
ok AS (
    SELECT c.id, c.ord, c.ckey, COALESCE(run.n, 0) AS running,
        CASE WHEN c.ckey IS NULL THEN 0 ELSE COALESCE(o.per_key_limit, kd.per_key_limit, qd.per_key_limit, 0) END AS lim
    FROM c
    LEFT JOIN fenced_job_limits o ON o.queue = $1 AND o.kind = '' AND o.concurrency_key = c.ckey AND o.per_key_limit > 0
    LEFT JOIN fenced_job_limits kd ON kd.queue = $1 AND kd.kind = c.kind AND kd.concurrency_key = '' AND kd.per_key_limit > 0
    LEFT JOIN fenced_job_limits qd ON qd.queue = $1 AND qd.kind = '' AND qd.concurrency_key = '' AND qd.per_key_limit > 0
    LEFT JOIN running run ON run.ckey = c.ckey
    WHERE CASE WHEN c.skey IS NULL THEN true
        WHEN c.seq_rank > 1 THEN false
        ELSE NOT EXISTS (SELECT 1 FROM (SELECT $1::text AS queue, c.skey AS sequence_key, c.id AS id) j
            WHERE ` + sequenceBlockedPG + `) END
),
ranked AS (
    SELECT ok.id, ok.ord, ok.ckey, ok.running, ok.lim,
        row_number() OVER (PARTITION BY ok.ckey ORDER BY ok.ord) AS krank,
        min(ok.lim) OVER (PARTITION BY ok.ckey) <> max(ok.lim) OVER (PARTITION BY ok.ckey) AS mixed
    FROM ok
),
mixed AS (
    SELECT EXISTS (SELECT 1 FROM ranked WHERE ranked.ckey IS NOT NULL AND ranked.mixed) AS yes
),
admitted AS (
    SELECT ranked.id FROM ranked
    WHERE ranked.ckey IS NULL OR ranked.lim = 0 OR ranked.running + ranked.krank <= ranked.lim
    ORDER BY ranked.ord
    LIMIT $8
),
started AS (
    UPDATE fenced_jobs j SET ` + jobStartSet + `
    WHERE j.id = ANY(ARRAY(SELECT id FROM admitted)) AND j.queue = $1 AND NOT (SELECT yes FROM mixed)
    RETURNING ` + jobColumns + `
)
SELECT s.*, false FROM started s
UNION ALL
SELECT ` + jobColumns + `, true FROM fenced_jobs j
WHERE (SELECT yes FROM mixed) AND j.id = ($3::bigint[])[1]`

// claimLimitedJobs is the claim of a queue gated by keys or limits: up to
// limitedRounds limited claims (claimLimitedRound), each picking a window
// of p.Limit+16 candidates, while a round took a full window and started
// some of it but fewer jobs than are still wanted. The admitted keys are
// running when the next round picks, so its pre-filter passes over the
// ones now full: the rounds reach past a window's repeated keys without
// every claim picking (and locking) twice as many rows as it wants.
func (d *Driver) claimLimitedJobs(ctx context.Context, p driver.ClaimJobsParams) ([]*fencedtype.Job, error) {
	var jobs []*fencedtype.Job
	want := p.Limit
	for round := 1; ; round++ {
		p.Limit = want - len(jobs)
		got, picked, err := d.claimLimitedRound(ctx, p)
		if err != nil {
			if len(jobs) > 0 { // started and committed: they are the caller's
				break
			}
			return nil, err
		}
		jobs = append(jobs, got...)
		if round == limitedRounds || len(got) == 0 || len(jobs) >= want || picked < limitedWindow(p.Limit) {
			break
		}
	}
	driver.SortClaimed(jobs)
	return jobs, nil
}

// limitedRounds bounds the limited claims of one ClaimJobs.
const limitedRounds = 4

// limitedWindow is how many candidates a limited round picks for limit
// jobs.
func limitedWindow(limit int) int { return limit + 16 }

// claimLimitedRound is one limited claim (see driver/claimlimits.go): one
// READ COMMITTED transaction that picks and locks candidates, takes the
// advisory locks of their keys in order and, in new statements (a snapshot
// taken after the locks, so it sees every attempt a claimer that held them
// before committed), reads their load, admits and starts. Without a global
// limit on the queue one statement does the last three
// (claimLimitedAdmitSQL), sent in one batch with the locks and the commit:
// the round takes two round trips, the first batch beginning the
// transaction and picking. When that statement finds a key whose
// candidates have different limits it starts nothing, and the round is
// made again admitting in Go (claimLimitedTx).
func (d *Driver) claimLimitedRound(ctx context.Context, p driver.ClaimJobsParams) ([]*fencedtype.Job, int, error) {
	jobs, picked, err := d.claimLimitedTx(ctx, p, false)
	if errors.Is(err, errAdmitMixed) {
		jobs, picked, err = d.claimLimitedTx(ctx, p, true)
	}
	return jobs, picked, err
}

// errAdmitMixed says claimLimitedAdmitSQL found a key whose candidates have
// different limits: it started nothing, and its transaction committed.
var errAdmitMixed = errors.New("limits differ among a key's candidates")

// claimLimitedTx is the transaction of a limited round. With inGo, or when
// the queue has a global limit (or in the deliberately broken build), the
// load is read after the locks in a batch, admitted in Go
// (driver.AdmitClaims) and the admitted started; otherwise
// claimLimitedAdmitSQL admits and starts. JIT compilation is off for the
// transaction (the pick's estimated cost invites it, and it costs more than
// the statements), and its statements use generic plans from their first
// run on a connection (planning the candidates' arrays anew each time costs
// more than the plan saves). A deadlock (possible only with another user of
// advisory locks whose id collides) is retried. It returns the jobs it
// started and how many candidates it picked.
func (d *Driver) claimLimitedTx(ctx context.Context, p driver.ClaimJobsParams, inGo bool) ([]*fencedtype.Job, int, error) {
	full := !d.noFullKeys.Has(p.Queue)
	pick, args := claimLimitedPickAnyKindSQL, []any{p.Queue, limitedWindow(p.Limit)}
	switch len(p.Kinds) {
	case 0:
		if !full {
			pick = claimLimitedPickAnyKindNoFullSQL
		}
	case 1:
		pick, args = claimLimitedPickOneKindSQL, append(args, p.Kinds[0])
		if !full {
			pick = claimLimitedPickOneKindNoFullSQL
		}
	default:
		pick, args = claimLimitedPickOfKindsSQL, append(args, p.Kinds)
		if !full {
			pick = claimLimitedPickOfKindsNoFullSQL
		}
	}
	var jobs []*fencedtype.Job
	var picked int
	err := retryDeadlock(ctx, func() error {
		jobs, picked = nil, 0
		var conn *pgxpool.Conn
		var cands []driver.ClaimCandidate
		var anyFull bool
		var load driver.ClaimLoad
		// Retried while the batch could not be sent: it writes nothing.
		err := d.pool.retry(ctx, func() error {
			if conn != nil {
				endTx(ctx, conn)
			}
			var err error
			if conn, err = d.pool.Pool.Acquire(ctx); err != nil {
				conn = nil
				return err
			}
			var b pgx.Batch
			b.Queue(`BEGIN ISOLATION LEVEL READ COMMITTED`)
			b.Queue(`SET LOCAL jit = off`)
			b.Queue(`SET LOCAL plan_cache_mode = force_generic_plan`)
			b.Queue(pick, args...)
			b.Queue(driver.JobGlobalLimitsSQL, p.Queue)
			br := conn.SendBatch(ctx, &b)
			cands, anyFull, load, err = readPick(br)
			return closeBatch(br, err)
		})
		if conn != nil {
			defer endTx(ctx, conn)
		}
		picked = len(cands)
		if err != nil || len(cands) == 0 {
			if err == nil {
				d.limited.Set(p.Queue, load.HasGlobal())
			}
			return err
		}
		defer func() {
			// Every candidate admitted (but the window's spare ones) and,
			// with the full keys, none full: the next pick goes without them.
			if all := len(jobs) == min(len(cands), p.Limit); full && all && !anyFull {
				d.noFullKeys.Set(p.Queue, true)
			} else if !full && !all {
				d.noFullKeys.Set(p.Queue, false)
			}
		}()
		locks := driver.LimitLockIDs(driver.LimitLockNames(p.Queue, cands, load.HasGlobal()))
		d.limited.Set(p.Queue, len(locks) > 0)
		if !inGo && driver.LimitsEnforced && !load.HasGlobal() {
			var b pgx.Batch
			if len(locks) > 0 {
				b.Queue(claimLimitLocksSQL, locks)
			}
			b.Queue(claimLimitedAdmitSQL, admitArgs(p, cands)...)
			b.Queue(`COMMIT`)
			br := conn.SendBatch(ctx, &b)
			var mixed bool
			jobs, mixed, err = readAdmitted(br, len(locks) > 0)
			if err = closeBatch(br, err); err != nil {
				jobs = nil
				return unknownOutcome(err) // the commit was sent
			}
			if mixed {
				return errAdmitMixed
			}
			return nil
		}
		if jobs, err = admitInGo(ctx, conn, p, cands, load, locks); err != nil {
			return err
		}
		if err := commit(ctx, conn); err != nil {
			jobs = nil
			return unknownOutcome(err)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return jobs, picked, nil
}

// endTx returns a connection of claimLimitedTx to the pool, rolling back
// the transaction it may have left open (the pool closes a connection it
// cannot tell to be idle).
func endTx(ctx context.Context, conn *pgxpool.Conn) {
	if pc := conn.Conn().PgConn(); !pc.IsClosed() && !pc.IsBusy() && pc.TxStatus() != 'I' {
		conn.Exec(context.WithoutCancel(ctx), `ROLLBACK`)
	}
	conn.Release()
}

// commit commits the transaction open on conn: an error when it rolled
// back instead.
func commit(ctx context.Context, conn *pgxpool.Conn) error {
	tag, err := conn.Exec(ctx, `COMMIT`)
	if err == nil && tag.String() != "COMMIT" {
		err = fmt.Errorf("commit ended in %s", tag)
	}
	return err
}

// admitArgs are claimLimitedAdmitSQL's parameters for cands.
func admitArgs(p driver.ClaimJobsParams, cands []driver.ClaimCandidate) []any {
	ids := make([]int64, len(cands))
	kinds, keys, seqs := make([]string, len(cands)), make([]string, len(cands)), make([]string, len(cands))
	for i, c := range cands {
		ids[i], kinds[i], keys[i], seqs[i] = c.ID, c.Kind, c.ConcurrencyKey, c.SequenceKey
	}
	return []any{p.Queue, p.Owner, ids, p.TTL.Microseconds(), kinds, keys, seqs, p.Limit}
}

// readAdmitted reads the second batch's replies: the locks when taken,
// claimLimitedAdmitSQL's (the jobs it started, or mixed) and the commit.
func readAdmitted(br pgx.BatchResults, locked bool) (jobs []*fencedtype.Job, mixed bool, err error) {
	if locked {
		if _, err := br.Exec(); err != nil {
			return nil, false, err
		}
	}
	rows, err := br.Query()
	s := newJobScanner(&mixed)
	jobs, err = collectRows(rows, err, func(r pgx.CollectableRow) (*fencedtype.Job, error) { return s.scan(r) })
	if err != nil {
		return nil, false, err
	}
	tag, err := br.Exec()
	if err == nil && tag.String() != "COMMIT" {
		err = fmt.Errorf("commit ended in %s", tag)
	}
	if err != nil || mixed {
		return nil, mixed, err
	}
	return jobs, false, nil
}

// admitInGo is the rest of a limited claim that admits in Go: in one batch
// it takes the locks (when there are any) and reads the load of cands in new
// statements (a snapshot taken after the locks), then admits with
// driver.AdmitClaims and starts the admitted.
func admitInGo(ctx context.Context, tx *pgxpool.Conn, p driver.ClaimJobsParams, cands []driver.ClaimCandidate, load driver.ClaimLoad, locks []int64) ([]*fencedtype.Job, error) {
	keys, sequenced := candidateKeys(cands)
	var b pgx.Batch
	if len(locks) > 0 {
		b.Queue(claimLimitLocksSQL, locks)
	}
	b.Queue(claimLimitRunningSQL, p.Queue, keys)
	b.Queue(driver.KeyLimitsSQL, p.Queue, keys)
	if len(sequenced) > 0 {
		b.Queue(claimLimitBlockedSQL, p.Queue, sequenced)
	}
	if load.HasGlobal() {
		b.Queue(driver.JobRunningByKindSQL, p.Queue)
	}
	br := tx.SendBatch(ctx, &b)
	err := readLoad(br, len(locks) > 0, len(sequenced) > 0, cands, &load)
	if err = closeBatch(br, err); err != nil {
		return nil, err
	}
	admitted := driver.AdmitClaims(cands, load, p.Limit)
	if len(admitted) == 0 {
		return nil, nil
	}
	jobs, err := collectJobs(tx.Query(ctx, claimLimitedStartSQL, p.Queue, p.Owner, admitted, p.TTL.Microseconds()))
	if err != nil {
		return nil, err
	}
	if len(jobs) != len(admitted) {
		return nil, fmt.Errorf("started %d of %d admitted jobs", len(jobs), len(admitted))
	}
	return jobs, nil
}

// readPick reads the first batch's replies: the BEGIN, the SETs, the
// picked candidates (and whether the pick found a full key) and the
// queue's global limits.
func readPick(br pgx.BatchResults) (cands []driver.ClaimCandidate, anyFull bool, load driver.ClaimLoad, err error) {
	for range 3 {
		if _, err := br.Exec(); err != nil {
			return nil, false, load, err
		}
	}
	rows, err := br.Query()
	cands, err = collectRows(rows, err, func(r pgx.CollectableRow) (driver.ClaimCandidate, error) {
		var c driver.ClaimCandidate
		return c, r.Scan(&c.ID, &c.Kind, &c.ConcurrencyKey, &c.SequenceKey, &anyFull)
	})
	if err != nil {
		return nil, false, load, err
	}
	err = readNamedCounts(br, load.AddGlobal)
	return cands, anyFull, load, err
}

// candidateKeys are the distinct concurrency keys of cands and the ids of
// those with a sequence key.
func candidateKeys(cands []driver.ClaimCandidate) (keys []string, sequenced []int64) {
	seen := map[string]bool{}
	for _, c := range cands {
		if c.ConcurrencyKey != "" && !seen[c.ConcurrencyKey] {
			seen[c.ConcurrencyKey] = true
			keys = append(keys, c.ConcurrencyKey)
		}
		if c.SequenceKey != "" {
			sequenced = append(sequenced, c.ID)
		}
	}
	return keys, sequenced
}

// readLoad reads admitInGo's replies into cands and load: the locks when
// taken, the running attempts of the keys, the limits that apply to them,
// the blocked sequenced candidates when there are any, and, when the queue
// has a global limit, its running jobs by kind.
func readLoad(br pgx.BatchResults, locked, sequenced bool, cands []driver.ClaimCandidate, load *driver.ClaimLoad) error {
	if locked {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	running := map[string]int{}
	if err := readNamedCounts(br, func(key string, n int) { running[key] = n }); err != nil {
		return err
	}
	var limits driver.KeyLimits
	rows, err := br.Query()
	if err != nil {
		return err
	}
	var kind, key string
	var limit int
	if _, err := pgx.ForEachRow(rows, []any{&kind, &key, &limit}, func() error { limits.Add(kind, key, limit); return nil }); err != nil {
		return err
	}
	blocked := map[int64]bool{}
	if sequenced {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		var id int64
		if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { blocked[id] = true; return nil }); err != nil {
			return err
		}
	}
	for i := range cands {
		c := &cands[i]
		c.KeyLimit = limits.Limit(c.Kind, c.ConcurrencyKey)
		c.KeyRunning = running[c.ConcurrencyKey]
		c.Blocked = blocked[c.ID]
	}
	if !load.HasGlobal() {
		return nil
	}
	return readNamedCounts(br, load.AddRunning)
}

// closeBatch closes a batch's results, keeping err when there is one.
func closeBatch(br pgx.BatchResults, err error) error {
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// readNamedCounts reads the next reply of br, rows of (name, count), into
// add: the queue's global limits, its running jobs by kind, or its keys'
// running attempts.
func readNamedCounts(br pgx.BatchResults, add func(string, int)) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	var kind string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&kind, &n}, func() error { add(kind, n); return nil })
	return err
}

// setJobLimitSQL stores a limit, replacing the one of its scope.
const setJobLimitSQL = `
INSERT INTO fenced_job_limits AS l (queue, kind, concurrency_key, per_key_limit, global_limit, updated_at)
VALUES ($1, $2, $3, $4, $5, clock_timestamp())
ON CONFLICT (queue, kind, concurrency_key) DO UPDATE SET
    per_key_limit = EXCLUDED.per_key_limit, global_limit = EXCLUDED.global_limit, updated_at = EXCLUDED.updated_at
RETURNING l.queue, l.kind, l.concurrency_key, l.per_key_limit, l.global_limit`

// SetJobLimit implements driver.JobDriver.
func (d *Driver) SetJobLimit(ctx context.Context, l fencedtype.JobLimit) (*fencedtype.JobLimit, error) {
	var out fencedtype.JobLimit
	err := d.pool.QueryRow(ctx, setJobLimitSQL, l.Queue, l.Kind, l.ConcurrencyKey, l.PerKey, l.Global).
		Scan(&out.Queue, &out.Kind, &out.ConcurrencyKey, &out.PerKey, &out.Global)
	if err != nil {
		return nil, fmt.Errorf("set job limit: %w", err)
	}
	return &out, nil
}

// deleteJobLimitSQL deletes the limit of one scope.
const deleteJobLimitSQL = `DELETE FROM fenced_job_limits WHERE queue = $1 AND kind = $2 AND concurrency_key = $3`

// DeleteJobLimit implements driver.JobDriver.
func (d *Driver) DeleteJobLimit(ctx context.Context, queue, kind, key string) error {
	tag, err := d.pool.Exec(ctx, deleteJobLimitSQL, queue, kind, key)
	if err != nil {
		return fmt.Errorf("delete job limit: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fencedtype.ErrNotFound
	}
	return nil
}

// listJobLimitsSQL lists the limits of queue $1, every queue when empty.
const listJobLimitsSQL = `
SELECT queue, kind, concurrency_key, per_key_limit, global_limit FROM fenced_job_limits
WHERE $1 = '' OR queue = $1
ORDER BY queue, kind, concurrency_key`

// ListJobLimits implements driver.JobDriver.
func (d *Driver) ListJobLimits(ctx context.Context, queue string) ([]fencedtype.JobLimit, error) {
	rows, err := d.pool.Query(ctx, listJobLimitsSQL, queue)
	out, err := collectRows(rows, err, func(r pgx.CollectableRow) (fencedtype.JobLimit, error) {
		var l fencedtype.JobLimit
		return l, r.Scan(&l.Queue, &l.Kind, &l.ConcurrencyKey, &l.PerKey, &l.Global)
	})
	if err != nil {
		return nil, fmt.Errorf("list job limits: %w", err)
	}
	return out, nil
}
