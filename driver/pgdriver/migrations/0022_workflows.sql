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

-- A task's row: its workflow and name, its edges still waiting and failed
-- (the counters the release rule keeps), whether it runs when a
-- dependency failed, and whether its workflow cancelled it. No foreign key:
-- its check would be a row trigger on every insert of every job; a
-- workflow is deleted with its tasks by the statements that delete it.
ALTER TABLE fenced_jobs
    ADD COLUMN workflow_id        bigint,
    ADD COLUMN task_name          text,
    ADD COLUMN deps_waiting       integer NOT NULL DEFAULT 0,
    ADD COLUMN deps_failed        integer NOT NULL DEFAULT 0,
    ADD COLUMN run_anyway         boolean NOT NULL DEFAULT false,
    ADD COLUMN workflow_cancelled boolean NOT NULL DEFAULT false;
CREATE UNIQUE INDEX fenced_jobs_task ON fenced_jobs (workflow_id, task_name) WHERE workflow_id IS NOT NULL;

-- One row per dependency edge: job_id runs after dep_id. status: 0
-- waiting, 1 done (the dependency succeeded), 2 failed (it failed for good
-- or was cancelled). A dependency's resolution reads its own edges by the
-- key's prefix; a task's dependencies are read by job_id.
CREATE TABLE fenced_job_deps (
    dep_id bigint   NOT NULL,
    job_id bigint   NOT NULL,
    status smallint NOT NULL DEFAULT 0 CHECK (status IN (0, 1, 2)),
    PRIMARY KEY (dep_id, job_id)
);
CREATE INDEX fenced_job_deps_job ON fenced_job_deps (job_id);

-- The release rule (§6.18), in three functions a transition's statement
-- runs: fenced_workflow_done after a dependency succeeded,
-- fenced_workflow_fail after dependencies failed for good or were
-- cancelled, fenced_workflow_unfail after failed or cancelled ones were
-- retried. They walk the graph by frontiers, in a loop: a cancel that runs
-- down a chain of any length needs no stack. Each step changes the
-- frontier's edges, then each dependent's counters in one UPDATE of its row
-- (deps_waiting - n): a dependent that two transactions resolve at once is
-- locked by the first, and the second's UPDATE, re-evaluated on the
-- committed row, reads its counts, so a fan-in task is released by exactly
-- one resolution. A release notifies the queues of the tasks it queued, as
-- an enqueue does. Only edges still waiting are resolved, so a function
-- run for a dependency whose older edges were resolved already (a task
-- added to a workflow later) resolves just the new ones.
CREATE FUNCTION fenced_workflow_done(dep bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    queues text[];
BEGIN
    WITH e AS (
        UPDATE fenced_job_deps SET status = 1 WHERE dep_id = dep AND status = 0 RETURNING job_id
    ), c AS (
        SELECT job_id, count(*)::integer AS n FROM e GROUP BY job_id
    ), t AS (
        UPDATE fenced_jobs t SET
            deps_waiting = t.deps_waiting - c.n,
            state = CASE WHEN t.state = 'pending' AND t.deps_waiting = c.n AND (t.deps_failed = 0 OR t.run_anyway)
                THEN 'queued' ELSE t.state END,
            updated_at = clock_timestamp()
        FROM c WHERE t.id = c.job_id
        RETURNING t.queue, t.state
    )
    SELECT array_agg(DISTINCT queue) FILTER (WHERE state = 'queued') INTO queues FROM t;
    PERFORM pg_notify('fenced_jobs', q) FROM unnest(queues) q;
END
$$;

-- A failed edge cancels a pending dependent that does not run anyway (its
-- own edges fail in the next step); one that runs anyway is queued once
-- none of its edges waits.
CREATE FUNCTION fenced_workflow_fail(deps bigint[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    frontier bigint[] := deps;
    woken    text[];
    queues   text[] := '{}';
BEGIN
    LOOP
        WITH e AS (
            UPDATE fenced_job_deps SET status = 2 WHERE dep_id = ANY (frontier) AND status = 0 RETURNING job_id
        ), c AS (
            SELECT job_id, count(*)::integer AS n FROM e GROUP BY job_id
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
            FROM c WHERE t.id = c.job_id
            RETURNING t.id, t.queue, t.state, t.workflow_cancelled AND t.deps_failed = c.n AS cancelled_now
        )
        SELECT array_agg(id) FILTER (WHERE cancelled_now),
            coalesce(array_agg(DISTINCT queue) FILTER (WHERE state = 'queued'), '{}')
        INTO frontier, woken FROM t;
        queues := queues || woken;
        EXIT WHEN frontier IS NULL;
    END LOOP;
    PERFORM pg_notify('fenced_jobs', q) FROM (SELECT DISTINCT unnest(queues) AS q) s;
END
$$;

-- A retried dependency's failed edges wait again; a dependent its workflow
-- cancelled with no failed edge left is pending again (its own failed
-- edges wait again in the next step), and a queued dependent (one running
-- anyway) waits for the retried one.
CREATE FUNCTION fenced_workflow_unfail(deps bigint[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    frontier bigint[] := deps;
BEGIN
    LOOP
        WITH e AS (
            UPDATE fenced_job_deps SET status = 0 WHERE dep_id = ANY (frontier) AND status = 2 RETURNING job_id
        ), c AS (
            SELECT job_id, count(*)::integer AS n FROM e GROUP BY job_id
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
            FROM c WHERE t.id = c.job_id
            RETURNING t.id, t.state
        )
        SELECT array_agg(id) FILTER (WHERE state = 'pending') INTO frontier FROM t;
        EXIT WHEN frontier IS NULL;
    END LOOP;
END
$$;

-- The trigger applies the rule in the statement of every transition of a
-- task's state, whoever wrote it (a worker's fenced end, recovery, an
-- operator's cancel or retry), so no path can forget it and none can commit
-- the change without it. The functions' own updates run at trigger depth 1,
-- which the WHEN skips: they apply the rule themselves.
CREATE FUNCTION fenced_workflow_step() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state = 'succeeded' THEN
        PERFORM fenced_workflow_done(NEW.id);
    ELSIF NEW.state IN ('failed', 'cancelled') THEN
        PERFORM fenced_workflow_fail(ARRAY[NEW.id]);
    ELSIF OLD.state IN ('failed', 'cancelled') THEN
        PERFORM fenced_workflow_unfail(ARRAY[NEW.id]);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER fenced_workflow_step AFTER UPDATE OF state ON fenced_jobs
    FOR EACH ROW
    WHEN (OLD.workflow_id IS NOT NULL AND OLD.state IS DISTINCT FROM NEW.state AND pg_trigger_depth() < 1)
    EXECUTE FUNCTION fenced_workflow_step();
