-- Lanes: a claim that does not walk the jobs it claimed before
-- (docs/design.md §6.17). While a snapshot is pinned (a long transaction
-- anywhere in the database), the index entries a claim leaves behind cannot
-- be removed or marked dead, and a claim that reads a queue's queued jobs in
-- claim order walks, and visits the heap for, every job claimed since the
-- pin began.
--
-- A job enqueued to run now, on its own transaction, without a concurrency
-- or sequence key, takes seq from fenced_job_seq while it holds its lane's
-- lock (queue, kind) shared until it commits. A claim filtered by kind holds
-- the locks of its kinds exclusively, and so sees every seq below the
-- largest it sees: it reads each lane (queue, kind, priority) from past its
-- cursor, the largest seq a claim of the lane took (the newest row of
-- fenced_job_lane_marks), and appends a mark of the largest it takes.
-- Everything else (scheduled, retried, recovered, enqueued in a caller's
-- transaction, keyed) waits with seq NULL or a fence above 0 in
-- fenced_jobs_waiting, in claim order as before.
CREATE SEQUENCE fenced_job_seq AS bigint;

ALTER TABLE fenced_jobs ADD COLUMN seq bigint;

-- The lanes a claim of a queue reads, one row each (queue, kind, priority),
-- inserted by the first enqueue that sequences a job into it and never
-- updated.
CREATE TABLE fenced_job_lanes (
    queue text NOT NULL,
    kind text NOT NULL,
    priority int NOT NULL,
    PRIMARY KEY (queue, kind, priority)
);

-- Append-only: a lane's cursor is its newest row. The maintainer deletes
-- the rows below each lane's newest.
CREATE TABLE fenced_job_lane_marks (
    queue text NOT NULL,
    kind text NOT NULL,
    priority int NOT NULL,
    seq bigint NOT NULL,
    PRIMARY KEY (queue, kind, priority, seq)
);

CREATE INDEX fenced_jobs_lane ON fenced_jobs (queue, kind, priority, seq)
    WHERE state = 'queued' AND fence = 0 AND seq IS NOT NULL;

-- fenced_jobs_claim_kind held every queued job; its successor holds only
-- those outside the lanes. A job that was claimed once (fence above 0) is
-- never in a lane again, whatever later puts it back to queued.
DROP INDEX fenced_jobs_claim_kind;
CREATE INDEX fenced_jobs_waiting ON fenced_jobs (queue, kind, priority, run_at, id)
    WHERE state = 'queued' AND (fence > 0 OR seq IS NULL);
