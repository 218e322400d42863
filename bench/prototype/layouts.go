package main

import (
	_ "embed"
	"strings"
)

// layout is one storage design under test: its schema and the statements
// of the claim path. Every statement carries a marker comment by which
// pg_stat_statements' row of it is found.
type layout struct {
	name     string
	schema   string
	enqueue  string // $1: jobs to add; run inside enqueueTx
	lock     string // run first in the enqueue's transaction, or ""
	claim    string // $1 queue, $2 owner, $3 limit, $4 ttl_us
	fenceCol int    // the claim's column of the fence (the id is the first)
	complete string // $1 ids, $2 fences, $3 outputs
	// heartbeat extends the leases of claimed attempts ($1 ids, $2
	// fences, $3 ttl_us), or is "" when the layout has none.
	heartbeat string
	tables    string // LIKE pattern of the tables to report
}

//go:embed today.sql
var todaySchema string

//go:embed appendonly.sql
var appendOnlySchema string

// today is the product's claim path as it stands (driver/pgdriver/job.go
// claimJobsSQL with no kind filter, jobend.go endCompletesSQL), copied
// verbatim but for the marker comments and the constants inlined.
var today = layout{
	name:   "today",
	schema: todaySchema,
	enqueue: `/*proto:enqueue*/ INSERT INTO fenced_jobs (kind, queue, args, max_attempts)
SELECT 'bench', 'default', '{}', 20 FROM generate_series(1, $1)`,
	claim: `/*proto:claim*/
WITH picked AS (
    SELECT id, (concurrency_key IS NOT NULL OR sequence_key IS NOT NULL) AS keyed FROM fenced_jobs
    WHERE state = 'queued' AND queue = $1 AND run_at <= clock_timestamp()
        AND NOT EXISTS (SELECT 1 FROM fenced_queue_pauses WHERE queue = $1)
    ORDER BY priority, run_at, id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), gated AS (
    SELECT EXISTS (SELECT 1 FROM picked WHERE keyed)
        OR EXISTS (SELECT 1 FROM fenced_job_limits WHERE queue = $1 AND global_limit > 0) AS yes
), claimed AS (
    UPDATE fenced_jobs j SET
    state = 'running', attempt = j.attempt + 1, fence = j.fence + 1, owner = $2,
    lease_expires_at = clock_timestamp() + $4::bigint * interval '1 microsecond',
    attempted_at = clock_timestamp(), updated_at = clock_timestamp(),
    cancel_requested = false, progress = NULL
    WHERE j.id = ANY(ARRAY(SELECT id FROM picked)) AND NOT (SELECT yes FROM gated)
    RETURNING ` + jobColumns + `
)
SELECT c.*, false FROM claimed c
UNION ALL
SELECT ` + jobColumns + `, true FROM fenced_jobs j
WHERE (SELECT yes FROM gated) AND j.id = (SELECT min(id) FROM picked)`,
	complete: `/*proto:complete*/
WITH n AS (
    SELECT clock_timestamp() AS at
), e AS (
    SELECT u.*, n.at
    FROM unnest($1::bigint[], $2::bigint[], $3::jsonb[]) WITH ORDINALITY AS u(id, fence, output, ord), n
), j AS (
    UPDATE fenced_jobs j SET
        state = 'succeeded', finished_at = e.at, output = e.output, last_error = NULL,
        lease_expires_at = NULL, updated_at = e.at
    FROM e
    WHERE j.id = e.id AND j.fence = e.fence AND j.state = (SELECT 'running') AND j.lease_expires_at > clock_timestamp()
    RETURNING j.id, j.fence, e.fence AS ended_fence, e.ord, e.at
)
SELECT id, fence, ord, at FROM j`,
	heartbeat: `/*proto:heartbeat*/
WITH locked AS (
    SELECT j.id FROM fenced_jobs j
    JOIN unnest($1::bigint[], $2::bigint[]) AS h(id, fence) ON j.id = h.id AND j.fence = h.fence
    WHERE j.state = (SELECT 'running') AND j.lease_expires_at > clock_timestamp()
    ORDER BY j.id
    FOR NO KEY UPDATE OF j SKIP LOCKED
)
UPDATE fenced_jobs j SET lease_expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond'
FROM locked WHERE j.id = locked.id AND j.state = (SELECT 'running') AND j.lease_expires_at > clock_timestamp()
RETURNING j.id, j.cancel_requested, j.lease_expires_at`,
	fenceCol: 8,
	tables:   "fenced_job%",
}

// jobColumns is the product's column list of a job read (pgdriver.jobColumns).
const jobColumns = `j.id, j.kind, j.queue, j.args, j.priority, j.state, j.attempt, j.max_attempts, j.fence,
	COALESCE(j.owner, ''), j.run_at, j.lease_expires_at, j.cancel_requested, j.output, COALESCE(j.last_error, ''),
	j.progress, COALESCE(j.idempotency_key, ''), j.created_at, j.attempted_at, j.finished_at,
	COALESCE(j.concurrency_key, ''), COALESCE(j.sequence_key, ''), j.sequence_continue_on_failed, j.metadata,
	clock_timestamp()`

// appendOnly is the proposed layout (appendonly.sql, docs/storage.md).
var appendOnly = layout{
	name:   "append-only",
	schema: appendOnlySchema,
	lock:   `SELECT pg_advisory_xact_lock(hashtextextended('default/0', 0))`,
	enqueue: `/*proto:enqueue*/
WITH j AS (
    INSERT INTO fenced_jobs (kind, queue, args, max_attempts)
    SELECT 'bench', 'default', '{}', 20 FROM generate_series(1, $1)
    RETURNING id, queue, priority, max_attempts
)
INSERT INTO fenced_ready (slot, queue, priority, seq, job_id, attempt, max_attempts)
SELECT (SELECT g.slot FROM fenced_ring g ORDER BY g.generation DESC LIMIT 1),
       k.queue, k.priority, nextval('fenced_ready_seq'), k.id, 1, k.max_attempts
FROM (SELECT * FROM j ORDER BY id) k`,
	claim:    `/*proto:claim*/ SELECT id, fence, attempt, kind, args, lease_expires_at FROM fenced_claim($1, 0, $2, $3, $4)`,
	complete: `/*proto:complete*/ SELECT * FROM fenced_complete($1, $2, $3)`,
	fenceCol: 1,
	tables:   "fenced_%",
}

//go:embed closing.sql
var closingSchema string

// appendOnlyClosing is appendOnly whose end also marks the receipt closed
// (closing.sql): the variant docs/storage.md proposes.
var appendOnlyClosing = func() layout {
	l := appendOnly
	l.name = "append-only+close"
	l.schema = appendOnlySchema + "\n" + closingSchema
	l.complete = `/*proto:complete*/ SELECT * FROM fenced_complete_closing($1, $2, $3)`
	l.heartbeat = `/*proto:heartbeat*/ SELECT * FROM fenced_heartbeat($1, $2, $3)`
	return l
}()

//go:embed shards.sql
var shardsSchema string

// appendOnlySharded is appendOnlyClosing with its lane split into 4 shards
// (shards.sql).
var appendOnlySharded = func() layout {
	l := appendOnlyClosing
	l.name = "append-only+shards"
	l.schema = appendOnlyClosing.schema + "\n" + shardsSchema
	l.lock = `SELECT count(pg_advisory_xact_lock(hashtextextended('default/' || s, 0))) FROM generate_series(0, 3) s`
	l.enqueue = strings.Replace(appendOnly.enqueue, "k.queue, k.priority, nextval", "k.queue, (k.id % 4)::integer, nextval", 1)
	l.claim = `/*proto:claim*/ SELECT id, fence, attempt, kind, args, lease_expires_at FROM fenced_claim_sharded($1, 4, $2, $3, $4)`
	return l
}()
