-- Workflows (docs/design.md §6.18): named tasks, each a job, that run once
-- the tasks they depend on have finished. A task waiting for a dependency
-- is pending, a state no claim reads, so no claim statement or index
-- changes.
ALTER TABLE fenced_jobs DROP CONSTRAINT fenced_jobs_state_check;
ALTER TABLE fenced_jobs ADD CONSTRAINT fenced_jobs_state_check
    CHECK (state IN ('pending', 'queued', 'running', 'succeeded', 'failed', 'cancelled')) NOT VALID;
ALTER TABLE fenced_jobs VALIDATE CONSTRAINT fenced_jobs_state_check;

CREATE TABLE fenced_workflows (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text        NOT NULL CHECK (octet_length(name) BETWEEN 1 AND 200),
    created_at   timestamptz NOT NULL,
    cancelled_at timestamptz
);
CREATE INDEX fenced_workflows_name ON fenced_workflows (name, id);

-- A task's row: its workflow and name; its dependencies and its dependents
-- (job ids: the graph's edges, kept on the rows they join, so that the
-- statement that ends a task reads its dependents from the row it locked
-- and updated, the newest version, whatever its snapshot); how many of its
-- dependencies have not finished, and how many failed or were cancelled
-- (the counters the release rule keeps); whether it runs when a
-- dependency failed; whether its workflow cancelled it. No foreign key:
-- its check would be a row trigger on every insert of every job; a
-- workflow is deleted with its tasks by the statements that delete it.
ALTER TABLE fenced_jobs
    ADD COLUMN workflow_id        bigint,
    ADD COLUMN task_name          text,
    ADD COLUMN dependencies       bigint[],
    ADD COLUMN dependents         bigint[],
    ADD COLUMN deps_waiting       integer NOT NULL DEFAULT 0,
    ADD COLUMN deps_failed        integer NOT NULL DEFAULT 0,
    ADD COLUMN run_anyway         boolean NOT NULL DEFAULT false,
    ADD COLUMN workflow_cancelled boolean NOT NULL DEFAULT false;
CREATE UNIQUE INDEX fenced_jobs_task ON fenced_jobs (workflow_id, task_name) WHERE workflow_id IS NOT NULL;

-- The release rule (§6.18), in three functions that get one element per
-- edge (a dependent's id) and run in the statement of the transition:
-- fenced_workflow_done after dependencies succeeded (called by the
-- statements that complete tasks, jobend.go, with every dependent of the
-- tasks they completed), fenced_workflow_fail after dependencies failed
-- for good or were cancelled, fenced_workflow_unfail after failed or
-- cancelled ones were retried (both by a row trigger: those transitions are
-- rarer, and many statements write them: an end, recovery, an operator's
-- cancel or retry, a workflow's). A function's statements take snapshots of
-- their own: a task that AddWorkflowTasks added after a dependency's ending
-- statement began (that statement waited for the addition's lock on the
-- dependency's row, and read its dependents from the newest version) is
-- seen. fail and unfail walk the graph by frontiers, in a loop: a cancel
-- that runs down a chain of any length needs no stack, and their updates
-- run at trigger depth 1, which the trigger's WHEN skips.
--
-- Each step changes each dependent's counters in one UPDATE of its row
-- (deps_waiting - n): a dependent that two transactions resolve at once is
-- locked by the first, and the second's UPDATE, re-evaluated on the
-- committed row, reads its counts, so a fan-in task is released once. A
-- release notifies the queues of the tasks it queued, as an enqueue does.

-- Dependencies succeeded: each dependent counts them down, and one left
-- with nothing to wait for, and no failed dependency unless it runs
-- anyway, is queued. It returns how many it queued.
CREATE FUNCTION fenced_workflow_done(edges bigint[]) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    queues text[];
BEGIN
    WITH c AS (
        SELECT id, count(*)::integer AS n FROM unnest(edges) AS id GROUP BY id
    ), t AS (
        UPDATE fenced_jobs t SET
            deps_waiting = t.deps_waiting - c.n,
            state = CASE WHEN t.state = 'pending' AND t.deps_waiting = c.n AND (t.deps_failed = 0 OR t.run_anyway)
                THEN 'queued' ELSE t.state END,
            updated_at = clock_timestamp()
        FROM c WHERE t.id = c.id
        RETURNING t.queue, t.state
    )
    SELECT coalesce(array_agg(queue) FILTER (WHERE state = 'queued'), '{}') INTO queues FROM t;
    PERFORM pg_notify('fenced_jobs', q) FROM (SELECT DISTINCT unnest(queues) AS q) s;
    RETURN cardinality(queues);
END
$$;

-- A failed dependency cancels a pending dependent that does not run
-- anyway (whose own dependents are the next frontier); one that runs
-- anyway is queued once none of its dependencies waits.
CREATE FUNCTION fenced_workflow_fail(edges bigint[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    frontier bigint[] := edges;
    woken    text[];
    queues   text[] := '{}';
BEGIN
    WHILE frontier IS NOT NULL LOOP
        WITH c AS (
            SELECT id, count(*)::integer AS n FROM unnest(frontier) AS id GROUP BY id
        ), t AS (
            UPDATE fenced_jobs t SET
                deps_waiting = t.deps_waiting - c.n,
                deps_failed = t.deps_failed + c.n,
                state = CASE
                    WHEN t.state = 'pending' AND NOT t.run_anyway THEN 'cancelled'
                    WHEN t.state = 'pending' AND t.deps_waiting = c.n THEN 'queued'
                    ELSE t.state END,
                workflow_cancelled = t.workflow_cancelled OR (t.state = 'pending' AND NOT t.run_anyway),
                finished_at = CASE WHEN t.state = 'pending' AND NOT t.run_anyway THEN clock_timestamp()
                    ELSE t.finished_at END,
                last_error = CASE WHEN t.state = 'pending' AND NOT t.run_anyway
                    THEN 'workflow: a dependency failed or was cancelled' ELSE t.last_error END,
                updated_at = clock_timestamp()
            FROM c WHERE t.id = c.id
            RETURNING t.queue, t.state, t.dependents, t.workflow_cancelled AND t.deps_failed = c.n AS cancelled_now
        )
        SELECT (SELECT array_agg(d) FROM t t2, unnest(t2.dependents) d WHERE t2.cancelled_now),
            coalesce(array_agg(DISTINCT queue) FILTER (WHERE state = 'queued'), '{}')
        INTO frontier, woken FROM t;
        queues := queues || woken;
    END LOOP;
    PERFORM pg_notify('fenced_jobs', q) FROM (SELECT DISTINCT unnest(queues) AS q) s;
END
$$;

-- A retried dependency's dependents wait for it again: one its workflow
-- cancelled with no failed dependency left is pending again (and its own
-- dependents are the next frontier), and a queued one (running anyway)
-- waits for the retried one.
CREATE FUNCTION fenced_workflow_unfail(edges bigint[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    frontier bigint[] := edges;
BEGIN
    WHILE frontier IS NOT NULL LOOP
        WITH c AS (
            SELECT id, count(*)::integer AS n FROM unnest(frontier) AS id GROUP BY id
        ), t AS (
            UPDATE fenced_jobs t SET
                deps_waiting = t.deps_waiting + c.n,
                deps_failed = t.deps_failed - c.n,
                state = CASE
                    WHEN t.workflow_cancelled AND t.deps_failed = c.n THEN 'pending'
                    WHEN t.state = 'queued' THEN 'pending'
                    ELSE t.state END,
                workflow_cancelled = t.workflow_cancelled AND t.deps_failed <> c.n,
                finished_at = CASE WHEN t.workflow_cancelled AND t.deps_failed = c.n THEN NULL ELSE t.finished_at END,
                last_error = CASE WHEN t.workflow_cancelled AND t.deps_failed = c.n THEN NULL ELSE t.last_error END,
                updated_at = clock_timestamp()
            FROM c WHERE t.id = c.id
            -- Revived: pending and not running anyway (a task its workflow
            -- cancelled never runs anyway; one that does was queued).
            RETURNING t.dependents, t.state = 'pending' AND NOT t.run_anyway AS revived
        )
        SELECT array_agg(d) INTO frontier FROM t, unnest(t.dependents) d WHERE t.revived;
    END LOOP;
END
$$;

CREATE FUNCTION fenced_workflow_step() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state IN ('failed', 'cancelled') THEN
        PERFORM fenced_workflow_fail(NEW.dependents);
    ELSE
        PERFORM fenced_workflow_unfail(NEW.dependents);
    END IF;
    RETURN NULL;
END
$$;

-- Fires on a failure, a cancel or a retry of a task with dependents.
CREATE TRIGGER fenced_workflow_step AFTER UPDATE OF state ON fenced_jobs
    FOR EACH ROW
    WHEN (OLD.dependents IS NOT NULL AND OLD.state IS DISTINCT FROM NEW.state
        AND (NEW.state IN ('failed', 'cancelled') OR OLD.state IN ('failed', 'cancelled'))
        AND pg_trigger_depth() < 1)
    EXECUTE FUNCTION fenced_workflow_step();
