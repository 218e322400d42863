package pgdriver

import "fmt"

// The statements of PostgreSQL's limited claim (driver/internal/claimlimit
// for its steps; docs/design.md §10, "The limited claim", for their design
// and measurements).

// keyLimitJoinSQL and keyLimitSQL are PostgreSQL's one statement of the
// limit rule: joined to a row aliased j, which has the columns queue, kind
// and concurrency_key, keyLimitSQL is the per-key limit (0 none) that
// applies to it: the key's own limit in its queue, else the default of its
// kind, else the queue's. A limit of 0 declares none at its scope, so the
// next scope is asked. With an empty kind the kind's step reads the
// queue's own row: a job of a kind that declares no default, or a key
// whose jobs are of several kinds, gets the key's own limit, else the
// queue's. Joins, not a subquery per row: the planner reads the few limit
// rows once, however many rows ask.
const (
	keyLimitJoinSQL = `
    LEFT JOIN fenced_job_limits lo
        ON lo.queue = j.queue AND lo.kind = '' AND lo.concurrency_key = j.concurrency_key AND lo.per_key_limit > 0
    LEFT JOIN fenced_job_limits lk
        ON lk.queue = j.queue AND lk.kind = j.kind AND lk.concurrency_key = '' AND lk.per_key_limit > 0
    LEFT JOIN fenced_job_limits lq
        ON lq.queue = j.queue AND lq.kind = '' AND lq.concurrency_key = '' AND lq.per_key_limit > 0`
	keyLimitSQL = `COALESCE(lo.per_key_limit, lk.per_key_limit, lq.per_key_limit, 0)`
)

// runningKeysSQL counts the running attempts of each concurrency key of
// queue $1. Expired attempts not yet recovered are running and count:
// their slot frees only when recovery takes the job back.
const runningKeysSQL = `running_keys AS (
    SELECT r.concurrency_key, count(*) AS n FROM fenced_jobs r
    WHERE r.state = 'running' AND r.queue = $1 AND r.concurrency_key IS NOT NULL
    GROUP BY r.concurrency_key
)`

// fullKeysSQL defines, for a pick of queue $1, key_kinds: the kinds of the
// queue that declare a per-key default, and the empty kind standing for
// every other; and full_keys: the running keys whose running attempts
// reach their limit (keyLimitSQL), each with the kinds of key_kinds it is full for. Only
// keys at or above the queue's smallest declared limit are asked: no limit
// below it can apply.
const fullKeysSQL = runningKeysSQL + `,
key_kinds AS (
    SELECT ''::text AS kind
    UNION ALL
    SELECT d.kind FROM fenced_job_limits d
    WHERE d.queue = $1 AND d.concurrency_key = '' AND d.kind <> '' AND d.per_key_limit > 0
),
full_keys AS (
    SELECT j.concurrency_key, j.kind FROM (
        SELECT $1::text AS queue, rk.concurrency_key, rk.n, k.kind FROM running_keys rk CROSS JOIN key_kinds k
        WHERE rk.n >= (SELECT min(l.per_key_limit) FROM fenced_job_limits l WHERE l.queue = $1 AND l.per_key_limit > 0)
    ) j` + keyLimitJoinSQL + `
    WHERE j.n >= NULLIF(` + keyLimitSQL + `, 0)
)`

// notFullSQL is true when the job row aliased j has no concurrency key, or
// its key is not full for its kind in fullKeysSQL's sets (a job of a kind
// without a default of its own is looked up under the empty kind): a
// lookup in two hashed sets per job.
const notFullSQL = `(j.concurrency_key IS NULL
        OR (j.concurrency_key, CASE WHEN j.kind IN (SELECT kind FROM key_kinds) THEN j.kind ELSE '' END)
            NOT IN (SELECT concurrency_key, kind FROM full_keys))`

// runningSequencesSQL lists the sequences of queue $1 with a running job,
// read once from the running rows and used as a hashed set by
// sequenceBlockedSQL.
const runningSequencesSQL = `running_sequences AS (
    SELECT DISTINCT r.sequence_key FROM fenced_jobs r
    WHERE r.state = 'running' AND r.queue = $1 AND r.sequence_key IS NOT NULL
)`

// sequenceBlockedSQL is true when the job row aliased j, which has a
// sequence key, may not run yet: a job of its sequence is running
// (running_sequences), or an earlier one (a range of fenced_jobs_sequence
// below j's id) is queued, running, or failed without
// sequence_continue_on_failed. A cancelled or succeeded job does not block.
const sequenceBlockedSQL = `(j.sequence_key IN (SELECT sequence_key FROM running_sequences)
        OR EXISTS (SELECT 1 FROM fenced_jobs s
            WHERE s.queue = j.queue AND s.sequence_key = j.sequence_key AND s.state IN ('queued', 'running', 'failed')
            AND s.id < j.id AND (s.state <> 'failed' OR NOT s.sequence_continue_on_failed)))`

// claimLimitedPickSQL picks and locks the candidates of a limited round:
// eligible queued jobs in claim order that the pre-filter
// (limitcheck.go) lets through, skipping rows other claimers hold; none
// when the queue is paused (queueNotPausedPG). The first %s is fullKeysSQL
// or nothing, the second whether any key is full (false when they are not
// read), the third the kind filter ($3), the fourth the full keys' test
// or nothing. Parameters: $1 queue, $2 window.
const claimLimitedPickSQL = `
WITH ` + runningSequencesSQL + `%s
SELECT j.id, j.kind, COALESCE(j.concurrency_key, ''), COALESCE(j.sequence_key, ''), %s FROM fenced_jobs j
WHERE j.state = 'queued' AND NOT j.held AND j.queue = $1 AND j.run_at <= clock_timestamp()%s
    AND ` + queueNotPausedPG + `
    AND ` + sequenceFilterSQL + `%s
ORDER BY j.priority, j.run_at, j.id
LIMIT $2
FOR UPDATE OF j SKIP LOCKED`

// limitedPick is claimLimitedPickSQL with kind filter kinds, with or
// without the full keys.
func limitedPick(kinds string, full bool) string {
	if full {
		return fmt.Sprintf(claimLimitedPickSQL, ",\n"+fullKeysSQL, "EXISTS (SELECT 1 FROM full_keys)", kinds, "\n    AND "+keyFilterSQL)
	}
	return fmt.Sprintf(claimLimitedPickSQL, "", "false", kinds, "")
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

// claimGlobalLimitsSQL reads the global limits of queue $1: kind (empty for
// the whole queue) and limit.
const claimGlobalLimitsSQL = `SELECT kind, global_limit FROM fenced_job_limits
WHERE queue = $1 AND concurrency_key = '' AND global_limit > 0`

// claimRunningByKindSQL counts the running jobs of queue $1 by kind.
const claimRunningByKindSQL = `SELECT kind, count(*) FROM fenced_jobs WHERE state = 'running' AND queue = $1 GROUP BY kind`

// claimLimitLocksSQL takes the transaction-scoped advisory locks of a
// limited claim, in the order of the array ($1, sorted by the caller): the
// function scan returns the elements in array order and the aggregate
// takes each as it comes. Held until the transaction ends.
const claimLimitLocksSQL = `SELECT count(pg_advisory_xact_lock(k)) FROM unnest($1::bigint[]) AS k`

// claimLimitLoadSQL reads the load of the locked candidates of queue $1
// afresh, after the locks, as claimlimit.ScanCandidate scans them, in
// claim order: each one's key limit, its key's running attempts (a probe of
// fenced_jobs_key_running each: a join to the queue's running keys is
// planned as a nested loop by a generic plan made while the table was
// small, and reads every running key once per candidate) and whether its sequence is
// blocked. The candidates' ids, kinds and keys come from the pick ($2, $3,
// $4, $5, in claim order; empty for no key): the rows are locked since, so
// they cannot have changed, and are not read again.
const claimLimitLoadSQL = `
WITH ` + runningSequencesSQL + `
SELECT j.id, j.kind, COALESCE(j.concurrency_key, ''), COALESCE(j.sequence_key, ''),
    CASE WHEN j.concurrency_key IS NULL THEN 0 ELSE ` + keyLimitSQL + ` END,
    CASE WHEN j.concurrency_key IS NULL THEN 0 ELSE (SELECT count(*) FROM fenced_jobs r
        WHERE r.state = 'running' AND r.queue = j.queue AND r.concurrency_key = j.concurrency_key) END,
    CASE WHEN j.sequence_key IS NOT NULL AND ` + sequenceBlockedSQL + ` THEN 1 ELSE 0 END
FROM (
    SELECT u.id, $1::text AS queue, u.kind, NULLIF(u.ckey, '') AS concurrency_key, NULLIF(u.skey, '') AS sequence_key, u.ord
    FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS u(id, kind, ckey, skey, ord)
) j` + keyLimitJoinSQL + `
ORDER BY j.ord`

// claimLimitedStartSQL starts the admitted candidates, queued rows of queue
// $1 the claim holds locked since its pick: they are found by their
// primary key alone (a state condition would invite a partial index).
// Parameters: $1 queue, $2 owner, $3 the ids, $4 ttl_us (as jobStartSet
// numbers them).
const claimLimitedStartSQL = `
UPDATE fenced_jobs j SET ` + jobStartSet + `
WHERE j.id = ANY($3::bigint[]) AND j.queue = $1
RETURNING ` + jobColumns
