-- Spare slots (docs/design.md §6.18, hand-off): a completion that
-- releases more dependents than it has slots for (a fan-out's split
-- releases all its parts at once) hands off, beside the one dependent each
-- completion may start in the slot it leaves, up to spare[i] more in the
-- queue spare_queues[i]: free slots of the worker's there, which it holds
-- for this statement and runs the extra attempts in. An extra attempt is
-- returned with taker 0. Everything else is migration 23's rule: an extra
-- is offered, in id order, among the dependents that are not their
-- taker's first, in its taker's queue, when that queue is open; the
-- update takes it only when ready and of what a claim would start.
--
-- The offers are decided before the update, into arrays, by hashing
-- rather than sorting (measured: the sorts and windows of migration 23's
-- offers took a fifth of the release of a thousand tasks); a batch without
-- spare slots ranks nothing. Migration 23's function stays, for workers
-- that hold no spare slots: it is this one with none.

-- fenced_workflow_offers is each dependent the edges (dependent, taker,
-- taker's queue) name: how many of them count it, its first taker (the
-- completion that is offered it), that taker's queue, whether the queue is
-- open (neither paused nor under a global limit, as a claim reads them),
-- and whether it is that taker's first dependent (the one its slot may
-- run).
CREATE FUNCTION fenced_workflow_offers(edges bigint[], takers integer[], queues text[])
RETURNS TABLE (id bigint, n integer, taker integer, queue text, open boolean, first boolean)
LANGUAGE sql STABLE AS $$
    WITH tq AS (
        SELECT e.taker, min(e.queue) AS queue FROM unnest(takers, queues) AS e(taker, queue) GROUP BY e.taker
    ), q AS (
        SELECT x.queue, NOT EXISTS (SELECT 1 FROM fenced_queue_pauses p WHERE p.queue = x.queue)
            AND NOT EXISTS (SELECT 1 FROM fenced_job_limits l WHERE l.queue = x.queue AND l.global_limit > 0) AS open
        FROM (SELECT DISTINCT tq.queue FROM tq) x
    ), d AS (
        SELECT e.id, count(*)::integer AS n, min(e.taker) AS taker FROM unnest(edges, takers) AS e(id, taker) GROUP BY e.id
    )
    SELECT d.id, d.n, d.taker, tq.queue, q.open, d.id = f.id
    FROM d JOIN tq ON tq.taker = d.taker JOIN q ON q.queue = tq.queue
        JOIN (SELECT d.taker, min(d.id) AS id FROM d GROUP BY d.taker) f ON f.taker = d.taker
$$;

CREATE FUNCTION fenced_workflow_release(edges bigint[], takers integer[], queues text[],
    owner text, ttl_us bigint, kinds text[], spare_queues text[], spare integer[],
    OUT released integer, OUT taken bigint[], OUT taken_fences bigint[], OUT taken_by integer[])
LANGUAGE plpgsql AS $$
DECLARE
    woken text[];
    o_id bigint[];
    o_n integer[];
    o_taker integer[];
    o_queue text[];
    o_offer boolean[];
BEGIN
    -- The offers: to its taker (its first), or to a spare slot (taker 0),
    -- in id order, which the update walks (a nested loop over them): two
    -- batches releasing shared dependents lock them in one order.
    IF coalesce(cardinality(spare_queues), 0) = 0 THEN
        SELECT array_agg(c.id), array_agg(c.n), array_agg(c.taker), array_agg(c.queue), array_agg(c.open AND c.first)
        INTO o_id, o_n, o_taker, o_queue, o_offer
        FROM (SELECT * FROM fenced_workflow_offers(edges, takers, queues) ORDER BY id) c;
    ELSE
        SELECT array_agg(c.id), array_agg(c.n), array_agg(CASE WHEN c.first THEN c.taker ELSE 0 END), array_agg(c.queue),
            array_agg(c.open AND (c.first OR c.k <= c.spare))
        INTO o_id, o_n, o_taker, o_queue, o_offer
        FROM (SELECT c.*, coalesce(s.n, 0) AS spare, row_number() OVER (PARTITION BY c.queue, c.first ORDER BY c.id) AS k
            FROM fenced_workflow_offers(edges, takers, queues) c
            LEFT JOIN (SELECT s.queue, sum(s.n) AS n FROM unnest(spare_queues, spare) AS s(queue, n) GROUP BY s.queue) s
                ON s.queue = c.queue
            ORDER BY c.id) c;
    END IF;
    WITH t AS (
        -- go: offered, of what a claim of the taker's queue starts, and
        -- ready (pending, nothing left to wait for, no failed dependency
        -- unless it runs anyway).
        UPDATE fenced_jobs t SET
            deps_waiting = t.deps_waiting - o.n,
            state = CASE WHEN o.offer AND t.queue = o.taker_queue AND t.kind = ANY(kinds) AND t.concurrency_key IS NULL AND t.sequence_key IS NULL
                AND NOT t.held AND t.run_at <= clock_timestamp()
                AND t.state = 'pending' AND t.deps_waiting = o.n AND (t.deps_failed = 0 OR t.run_anyway)
                THEN 'running' ELSE CASE WHEN t.state = 'pending' AND t.deps_waiting = o.n AND (t.deps_failed = 0 OR t.run_anyway) THEN 'queued' ELSE t.state END END,
            attempt = CASE WHEN o.offer AND t.queue = o.taker_queue AND t.kind = ANY(kinds) AND t.concurrency_key IS NULL AND t.sequence_key IS NULL
                AND NOT t.held AND t.run_at <= clock_timestamp()
                AND t.state = 'pending' AND t.deps_waiting = o.n AND (t.deps_failed = 0 OR t.run_anyway)
                THEN t.attempt + 1 ELSE t.attempt END,
            fence = CASE WHEN o.offer AND t.queue = o.taker_queue AND t.kind = ANY(kinds) AND t.concurrency_key IS NULL AND t.sequence_key IS NULL
                AND NOT t.held AND t.run_at <= clock_timestamp()
                AND t.state = 'pending' AND t.deps_waiting = o.n AND (t.deps_failed = 0 OR t.run_anyway)
                THEN t.fence + 1 ELSE t.fence END,
            owner = CASE WHEN o.offer AND t.queue = o.taker_queue AND t.kind = ANY(kinds) AND t.concurrency_key IS NULL AND t.sequence_key IS NULL
                AND NOT t.held AND t.run_at <= clock_timestamp()
                AND t.state = 'pending' AND t.deps_waiting = o.n AND (t.deps_failed = 0 OR t.run_anyway)
                THEN fenced_workflow_release.owner ELSE t.owner END,
            lease_expires_at = CASE WHEN o.offer AND t.queue = o.taker_queue AND t.kind = ANY(kinds) AND t.concurrency_key IS NULL AND t.sequence_key IS NULL
                AND NOT t.held AND t.run_at <= clock_timestamp()
                AND t.state = 'pending' AND t.deps_waiting = o.n AND (t.deps_failed = 0 OR t.run_anyway)
                THEN clock_timestamp() + ttl_us * interval '1 microsecond' ELSE t.lease_expires_at END,
            attempted_at = CASE WHEN o.offer AND t.queue = o.taker_queue AND t.kind = ANY(kinds) AND t.concurrency_key IS NULL AND t.sequence_key IS NULL
                AND NOT t.held AND t.run_at <= clock_timestamp()
                AND t.state = 'pending' AND t.deps_waiting = o.n AND (t.deps_failed = 0 OR t.run_anyway)
                THEN clock_timestamp() ELSE t.attempted_at END,
            cancel_requested = CASE WHEN o.offer AND t.queue = o.taker_queue AND t.kind = ANY(kinds) AND t.concurrency_key IS NULL AND t.sequence_key IS NULL
                AND NOT t.held AND t.run_at <= clock_timestamp()
                AND t.state = 'pending' AND t.deps_waiting = o.n AND (t.deps_failed = 0 OR t.run_anyway)
                THEN false ELSE t.cancel_requested END,
            progress = CASE WHEN o.offer AND t.queue = o.taker_queue AND t.kind = ANY(kinds) AND t.concurrency_key IS NULL AND t.sequence_key IS NULL
                AND NOT t.held AND t.run_at <= clock_timestamp()
                AND t.state = 'pending' AND t.deps_waiting = o.n AND (t.deps_failed = 0 OR t.run_anyway)
                THEN NULL ELSE t.progress END,
            updated_at = clock_timestamp()
        FROM unnest(o_id, o_n, o_taker, o_queue, o_offer) AS o(id, n, taker, taker_queue, offer)
        WHERE t.id = o.id
        RETURNING t.id, t.queue, t.state, t.fence, o.taker
    )
    SELECT array_agg(id ORDER BY id) FILTER (WHERE state = 'running'),
        array_agg(fence ORDER BY id) FILTER (WHERE state = 'running'),
        array_agg(taker ORDER BY id) FILTER (WHERE state = 'running'),
        coalesce(array_agg(queue) FILTER (WHERE state = 'queued'), '{}')
    INTO taken, taken_fences, taken_by, woken FROM t;
    released := cardinality(woken) + coalesce(cardinality(taken), 0);
    PERFORM pg_notify('fenced_jobs', q) FROM (SELECT DISTINCT unnest(woken) AS q) s;
END
$$;

CREATE OR REPLACE FUNCTION fenced_workflow_release(edges bigint[], takers integer[], queues text[],
    owner text, ttl_us bigint, kinds text[],
    OUT released integer, OUT taken bigint[], OUT taken_fences bigint[], OUT taken_by integer[])
LANGUAGE sql AS $$
    SELECT * FROM fenced_workflow_release(edges, takers, queues, owner, ttl_us, kinds, '{}', '{}')
$$;
