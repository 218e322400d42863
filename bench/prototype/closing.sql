-- The variant "append-only+close" of layout (b): an end also marks its
-- receipt closed, a HOT update (closed_at is in no index; the receipts'
-- pages keep half their room for it), so that every transition of an
-- attempt changes the one row it locks and a JobTx waiting for that row,
-- or one under REPEATABLE READ, judges the new version (docs/storage.md,
-- "Guarantees").
ALTER TABLE fenced_receipts ADD COLUMN closed_at timestamptz;
DO $$
BEGIN
    FOR s IN 0..3 LOOP
        EXECUTE format('ALTER TABLE fenced_receipts_%s SET (fillfactor = 50)', s);
    END LOOP;
END $$;

CREATE FUNCTION fenced_complete_closing(ids bigint[], fences bigint[], outputs jsonb[])
RETURNS TABLE (id bigint, fence bigint, ord bigint, ended_at timestamptz)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    WITH e AS (
        SELECT u.*, clock_timestamp() AS at FROM unnest(ids, fences, outputs) WITH ORDINALITY AS u(id, fence, output, ord)
    ), r AS (
        UPDATE fenced_receipts r SET closed_at = e.at
        FROM e
        -- = ANY(ids): a probe of each id, whichever way the join is planned
        WHERE r.job_id = ANY(ids) AND r.job_id = e.id AND r.fence = e.fence
            AND r.closed_at IS NULL AND r.lease_expires_at > e.at
        RETURNING r.slot, r.job_id, r.fence, r.attempt, r.owner, r.claimed_at, e.at, e.output
    ), c AS (
        INSERT INTO fenced_closures AS c (slot, job_id, fence, attempt, outcome, owner, started_at, ended_at, output)
        SELECT r.slot, r.job_id, r.fence, r.attempt, 'succeeded', r.owner, r.claimed_at, r.at, r.output FROM r
        ON CONFLICT DO NOTHING
        RETURNING c.job_id, c.fence, c.ended_at
    )
    SELECT c.job_id, c.fence, e.ord, c.ended_at FROM c JOIN e ON e.id = c.job_id;
END $$;
ALTER FUNCTION fenced_complete_closing SET enable_seqscan = off;
ALTER FUNCTION fenced_complete_closing SET enable_hashjoin = off;
ALTER FUNCTION fenced_complete_closing SET enable_mergejoin = off;
ALTER FUNCTION fenced_complete_closing SET plan_cache_mode = force_generic_plan;

-- fenced_heartbeat extends the leases of the attempts given: a HOT update
-- of each receipt (lease_expires_at is in no index), skipping a receipt
-- held by its attempt's open JobTx, as today's heartbeat skips the job row.
CREATE FUNCTION fenced_heartbeat(ids bigint[], fences bigint[], ttl_us bigint)
RETURNS TABLE (id bigint, lease_expires_at timestamptz)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    WITH h AS (
        SELECT * FROM unnest(ids, fences) AS u(id, fence) ORDER BY 1
    ), locked AS (
        SELECT l.* FROM h, LATERAL (SELECT r.slot, r.job_id, r.fence FROM fenced_receipts r
            WHERE r.job_id = h.id AND r.fence = h.fence AND r.closed_at IS NULL
                AND r.lease_expires_at > clock_timestamp()
            LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED) l
    )
    UPDATE fenced_receipts r SET lease_expires_at = clock_timestamp() + ttl_us * interval '1 microsecond'
    FROM locked l
    WHERE r.job_id = ANY(ids) AND r.job_id = l.job_id AND r.fence = l.fence AND r.slot = l.slot
        AND r.closed_at IS NULL AND r.lease_expires_at > clock_timestamp()
    RETURNING r.job_id, r.lease_expires_at;
END $$;
ALTER FUNCTION fenced_heartbeat SET enable_seqscan = off;
ALTER FUNCTION fenced_heartbeat SET enable_hashjoin = off;
ALTER FUNCTION fenced_heartbeat SET enable_mergejoin = off;
ALTER FUNCTION fenced_heartbeat SET plan_cache_mode = force_generic_plan;
