-- Layout (b), proposed (docs/storage.md): no row of the claim path is ever
-- updated. A job's body is written once; it becomes claimable by an
-- immutable ready entry appended to its lane (queue, priority) with a
-- sequence number; a claim appends a receipt (job, fence) and finds its
-- place in the lane from the newest receipt, not from a row it updates; an
-- end appends a closure whose primary key (job, fence) admits one end per
-- attempt. Ready entries, receipts and closures live in ring partitions
-- (slot), reclaimed by TRUNCATE once proven done, never by VACUUM.

-- The ring's cursor, append-only: the current slot is the newest generation.
CREATE TABLE fenced_ring (
    generation bigint      PRIMARY KEY,
    slot       smallint    NOT NULL,
    rotated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
INSERT INTO fenced_ring (generation, slot) VALUES (0, 0);

-- Job bodies: written once by the enqueue, never updated on the hot path.
CREATE TABLE fenced_jobs (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind             text        NOT NULL CHECK (octet_length(kind) BETWEEN 1 AND 200),
    queue            text        NOT NULL CHECK (octet_length(queue) BETWEEN 1 AND 100),
    args             jsonb       NOT NULL,
    priority         integer     NOT NULL DEFAULT 0 CHECK (priority >= 0),
    run_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    max_attempts     integer     NOT NULL CHECK (max_attempts >= 1),
    idempotency_key  text        CHECK (octet_length(idempotency_key) BETWEEN 1 AND 200),
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    concurrency_key  text,
    sequence_key     text,
    sequence_continue_on_failed boolean NOT NULL DEFAULT false,
    metadata         jsonb
);
CREATE UNIQUE INDEX fenced_jobs_idempotency_key ON fenced_jobs (idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE SEQUENCE fenced_ready_seq;
CREATE SEQUENCE fenced_fence_seq;

-- One entry per attempt made claimable (enqueue, retry, snooze, recovery).
CREATE TABLE fenced_ready (
    slot         smallint NOT NULL,
    queue        text     NOT NULL,
    priority     integer  NOT NULL,
    seq          bigint   NOT NULL,
    job_id       bigint   NOT NULL,
    attempt      integer  NOT NULL, -- the attempt this entry starts
    max_attempts integer  NOT NULL,
    PRIMARY KEY (queue, priority, seq, slot)
) PARTITION BY LIST (slot);
CREATE INDEX fenced_ready_job ON fenced_ready (job_id);

-- Queued entries cancelled before any claim (rare): the claim passes them.
CREATE TABLE fenced_ready_tombstones (
    slot    smallint NOT NULL,
    job_id  bigint   NOT NULL,
    attempt integer  NOT NULL,
    PRIMARY KEY (job_id, attempt, slot)
) PARTITION BY LIST (slot);

-- One receipt per attempt: the fence, the owner and the lease. Only a
-- heartbeat (lease_expires_at, not indexed: a HOT update) or a recovery
-- writes it again.
CREATE TABLE fenced_receipts (
    slot             smallint    NOT NULL,
    job_id           bigint      NOT NULL,
    fence            bigint      NOT NULL,
    attempt          integer     NOT NULL,
    queue            text        NOT NULL,
    priority         integer     NOT NULL,
    ready_seq        bigint      NOT NULL,
    owner            text        NOT NULL,
    claimed_at       timestamptz NOT NULL,
    lease_expires_at timestamptz NOT NULL,
    PRIMARY KEY (job_id, fence, slot)
) PARTITION BY LIST (slot);
-- The lane's claim cursor: the newest receipt's ready_seq.
CREATE INDEX fenced_receipts_lane ON fenced_receipts (queue, priority, ready_seq);

-- One closure per ended attempt, in its receipt's slot: the primary key
-- admits one end per (job, fence), whoever races (an end, a recovery).
CREATE TABLE fenced_closures (
    slot       smallint    NOT NULL,
    job_id     bigint      NOT NULL,
    fence      bigint      NOT NULL,
    attempt    integer     NOT NULL,
    outcome    text        NOT NULL,
    owner      text        NOT NULL,
    started_at timestamptz NOT NULL,
    ended_at   timestamptz NOT NULL,
    output     jsonb,
    error      text,
    PRIMARY KEY (job_id, fence, slot)
) PARTITION BY LIST (slot);

DO $$
BEGIN
    FOR s IN 0..3 LOOP
        EXECUTE format('CREATE TABLE fenced_ready_%s PARTITION OF fenced_ready FOR VALUES IN (%s)', s, s);
        EXECUTE format('CREATE TABLE fenced_ready_tombstones_%s PARTITION OF fenced_ready_tombstones FOR VALUES IN (%s)', s, s);
        EXECUTE format('CREATE TABLE fenced_receipts_%s PARTITION OF fenced_receipts FOR VALUES IN (%s) WITH (fillfactor = 90)', s, s);
        EXECUTE format('CREATE TABLE fenced_closures_%s PARTITION OF fenced_closures FOR VALUES IN (%s)', s, s);
    END LOOP;
END $$;

CREATE TABLE fenced_job_limits (
    queue           text        NOT NULL,
    kind            text        NOT NULL DEFAULT '',
    concurrency_key text        NOT NULL DEFAULT '',
    per_key_limit   integer     NOT NULL DEFAULT 0,
    global_limit    integer     NOT NULL DEFAULT 0,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (queue, kind, concurrency_key)
);

CREATE TABLE fenced_queue_pauses (
    queue     text        PRIMARY KEY,
    paused_at timestamptz NOT NULL
);

-- fenced_claim claims up to n ready entries of a lane in seq order. Its
-- first statement serializes the lane's claimers (a transaction advisory
-- lock: no tuple is written); the second, run on a snapshot taken after the
-- lock (READ COMMITTED, a new statement), reads the lane's cursor from the
-- newest receipt, takes the next entries, and appends a receipt per entry
-- with a fresh fence. An enqueue takes the same lock for the statement that
-- draws its seq and commits (docs/storage.md: why no entry can be skipped).
CREATE FUNCTION fenced_claim(q text, p integer, own text, n integer, ttl_us bigint)
RETURNS TABLE (id bigint, fence bigint, attempt integer, kind text, args jsonb, lease_expires_at timestamptz)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(q || '/' || p, 0));
    RETURN QUERY
    WITH cur AS (
        SELECT COALESCE((SELECT r.ready_seq FROM fenced_receipts r
                         WHERE r.queue = q AND r.priority = p
                         ORDER BY r.ready_seq DESC LIMIT 1), 0) AS s
    ), picked AS (
        SELECT e.job_id, e.attempt, e.seq FROM fenced_ready e
        WHERE e.queue = q AND e.priority = p AND e.seq > (SELECT s FROM cur)
            AND NOT EXISTS (SELECT 1 FROM fenced_queue_pauses WHERE queue = q)
            AND NOT EXISTS (SELECT 1 FROM fenced_ready_tombstones t
                            WHERE t.job_id = e.job_id AND t.attempt = e.attempt)
        ORDER BY e.seq
        LIMIT n
    ), ins AS (
        INSERT INTO fenced_receipts AS r (slot, job_id, fence, attempt, queue, priority, ready_seq, owner, claimed_at, lease_expires_at)
        SELECT (SELECT g.slot FROM fenced_ring g ORDER BY g.generation DESC LIMIT 1),
               k.job_id, nextval('fenced_fence_seq'), k.attempt, q, p, k.seq, own, clock_timestamp(),
               clock_timestamp() + ttl_us * interval '1 microsecond'
        FROM (SELECT * FROM picked ORDER BY seq) k
        RETURNING r.job_id, r.fence, r.attempt, r.lease_expires_at
    )
    SELECT i.job_id, i.fence, i.attempt, j.kind, j.args, i.lease_expires_at
    FROM ins i, LATERAL (SELECT * FROM fenced_jobs j WHERE j.id = i.job_id LIMIT 1) j;
END $$;

-- fenced_complete ends attempts as completions: one closure per (job,
-- fence) whose receipt holds an unexpired lease; the closure's primary key
-- refuses a second end of the attempt (a recovery, a repeat), which then
-- returns no row and is diagnosed by a read, as today.
CREATE FUNCTION fenced_complete(ids bigint[], fences bigint[], outputs jsonb[])
RETURNS TABLE (id bigint, fence bigint, ord bigint, ended_at timestamptz)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    WITH e AS (
        SELECT u.* FROM unnest(ids, fences, outputs) WITH ORDINALITY AS u(id, fence, output, ord)
    ), c AS (
        INSERT INTO fenced_closures AS c (slot, job_id, fence, attempt, outcome, owner, started_at, ended_at, output)
        SELECT r.slot, r.job_id, r.fence, r.attempt, 'succeeded', r.owner, r.claimed_at, clock_timestamp(), e.output
        FROM e, LATERAL (SELECT * FROM fenced_receipts r
                         WHERE r.job_id = e.id AND r.fence = e.fence AND r.lease_expires_at > clock_timestamp()
                         LIMIT 1
                         -- Waits for the attempt's open JobTx (FOR SHARE), as
                         -- today's UPDATE of the job row does; a lock writes
                         -- no new row version.
                         FOR NO KEY UPDATE) r -- LIMIT: a probe per end, never a join turned into a scan
        ON CONFLICT DO NOTHING
        RETURNING c.job_id, c.fence, c.ended_at
    )
    SELECT c.job_id, c.fence, e.ord, c.ended_at FROM c JOIN e ON e.id = c.job_id;
END $$;

-- The ring's partitions have no statistics after a TRUNCATE (nor before
-- their first analyze), and a plan chosen on none sorts or hashes a whole
-- partition. The hot path's plans are therefore fixed as index probes, not
-- left to the statistics of the moment.
ALTER FUNCTION fenced_claim SET enable_seqscan = off;
ALTER FUNCTION fenced_claim SET enable_sort = off;
ALTER FUNCTION fenced_complete SET enable_seqscan = off;
ALTER FUNCTION fenced_complete SET enable_hashjoin = off;
ALTER FUNCTION fenced_complete SET enable_mergejoin = off;
-- Plans of the hot path are made once per session (generic), not per call:
-- planning a statement over every partition of the ring costs more than
-- running it.
ALTER FUNCTION fenced_claim SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION fenced_complete SET plan_cache_mode = force_generic_plan;
