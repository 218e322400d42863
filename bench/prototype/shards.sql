-- The variant "append-only+shards" of layout (b), on top of closing.sql: a
-- lane is split into 4 shards (the prototype's priority column holds the
-- shard; its enqueue spreads jobs over them by id). A claimer tries the
-- shards' locks without waiting, starting from one of its own, and claims
-- from the first it gets: a lane shard held by another claimer is skipped,
-- as SKIP LOCKED skips a row (docs/storage.md §4).

-- fenced_claim_locked is fenced_claim's second statement: the caller holds
-- the shard's lock.
CREATE FUNCTION fenced_claim_locked(q text, p integer, own text, n integer, ttl_us bigint)
RETURNS TABLE (id bigint, fence bigint, attempt integer, kind text, args jsonb, lease_expires_at timestamptz)
LANGUAGE plpgsql AS $$
BEGIN
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

CREATE FUNCTION fenced_claim_sharded(q text, shards integer, own text, n integer, ttl_us bigint)
RETURNS TABLE (id bigint, fence bigint, attempt integer, kind text, args jsonb, lease_expires_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    first integer := pg_backend_pid() % shards;
    sh integer;
BEGIN
    FOR k IN 0..shards - 1 LOOP
        sh := (first + k) % shards;
        IF pg_try_advisory_xact_lock(hashtextextended(q || '/' || sh, 0)) THEN
            -- A new statement: its snapshot follows the lock.
            RETURN QUERY SELECT * FROM fenced_claim_locked(q, sh, own, n, ttl_us);
            IF FOUND THEN
                RETURN;
            END IF;
        END IF;
    END LOOP;
END $$;
ALTER FUNCTION fenced_claim_locked SET enable_seqscan = off;
ALTER FUNCTION fenced_claim_locked SET enable_sort = off;
ALTER FUNCTION fenced_claim_locked SET plan_cache_mode = force_generic_plan;
