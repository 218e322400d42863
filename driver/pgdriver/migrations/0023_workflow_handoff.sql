-- Hand-off (docs/design.md §6.18): the statement that completes a task on
-- a worker may start one dependent it released on that same worker, in
-- the slot the completed task leaves free, instead of queueing it for a
-- claim. The release and the start are one update of the dependent's row,
-- under the completion's fence check: a task written only once between
-- pending and running, where a queue-and-claim writes it twice.
--
-- fenced_workflow_release is fenced_workflow_done (migration 22) with
-- takers: edges[i] is a dependent's id and takers[i] the position, in the
-- ending statement, of the completion that counted it, queues[i] that
-- completed task's queue. Each dependent is offered to the first of its
-- takers, and each taker is offered only its first dependent (so no taker
-- ever gets two); a dependent the release leaves with nothing to wait for
-- is started at once, for owner, with a lease of ttl_us, when it is of one
-- of kinds, in its taker's queue, due, with neither a concurrency nor a
-- sequence key, its queue neither paused nor under a global limit — what a
-- claim of that queue would have started. Everything else released is
-- queued, and its queue notified, as fenced_workflow_done does. The start
-- is jobStartSet's (pgdriver/job.go): the attempt and the fence counted up,
-- the lease from clock_timestamp().
--
-- The offer (which taker a dependent is offered to, and whether the
-- taker's queue is open: neither paused nor under a global limit, as the
-- statement's snapshot has them, as a claim reads them) is decided from
-- the edges before the update; whether the dependent is taken, by the
-- update, from the row it locked (the newest, re-read when another release
-- changed it first): ready, and of what a claim would start. So two
-- releases racing for one fan-in still release it once, and an offer to a
-- dependent that is not ready is simply not taken. The start is the same
-- one row update as the release, so its condition (go, below) is written
-- out in each column it sets.
CREATE FUNCTION fenced_workflow_release(edges bigint[], takers integer[], queues text[],
    owner text, ttl_us bigint, kinds text[],
    OUT released integer, OUT taken bigint[], OUT taken_fences bigint[], OUT taken_by integer[])
LANGUAGE plpgsql AS $$
DECLARE
    woken text[];
BEGIN
    WITH q AS (
        SELECT x.queue, NOT EXISTS (SELECT 1 FROM fenced_queue_pauses p WHERE p.queue = x.queue)
            AND NOT EXISTS (SELECT 1 FROM fenced_job_limits l WHERE l.queue = x.queue AND l.global_limit > 0) AS open
        FROM (SELECT DISTINCT unnest(queues) AS queue) x
    ), c AS (
        SELECT id, count(*)::integer AS n, min(taker) AS taker, (array_agg(queue ORDER BY taker))[1] AS queue
        FROM unnest(edges, takers, queues) AS e(id, taker, queue) GROUP BY id
    ), o AS (
        SELECT c.id, c.n, c.taker, c.queue AS taker_queue,
            c.id = min(c.id) OVER (PARTITION BY c.taker) AND q.open AS offer
        FROM c JOIN q ON q.queue = c.queue
    ), t AS (
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
        FROM o WHERE t.id = o.id
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
