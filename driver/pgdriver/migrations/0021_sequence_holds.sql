-- Held sequence jobs (docs/design.md §6.10, "Held jobs"). A queued job of a
-- sequence behind an earlier job of it that can block it is held: it is in
-- no claim index, so a claim never reads past it, however long the
-- sequence. Holding is a hint the claim never trusts: the limited claim
-- still tests every sequenced job it picks under the sequence's lock (an
-- enqueue that holds nothing, a unique job's, only costs a pick). What a
-- hold must never do is outlive the reason for it, so every transition
-- that can make a held job its sequence's head releases it (an end, a
-- cancel, a deletion), and the maintainer releases any it finds left over.
ALTER TABLE fenced_jobs ADD COLUMN held boolean NOT NULL DEFAULT false;

-- The advisory lock of a sequence: the queue's and one of 64 buckets the
-- key falls in, so that an enqueue of many sequences takes at most 64 locks
-- per queue. An enqueue takes the locks of its sequences shared, in the
-- order of their ids, before the statement that decides their holds, and
-- keeps them until it commits; a release takes one exclusively, so it sees
-- every enqueue that saw the job it follows still open. (The enqueue
-- decides in its own statements, not in a row trigger: a BEFORE ROW trigger
-- on fenced_jobs would make every COPY insert row by row.)
CREATE FUNCTION fenced_sequence_lock(queue text, sequence_key text) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT hashtextextended('fenced.sequence/' || queue || '/' || (hashtext(sequence_key) & 63)::text, 0) $$;

-- fenced_release_sequence releases the held head of a sequence, if it has
-- one: the first job after the given id that can block it, when it is
-- queued and held. It takes the sequence's lock exclusively before it reads
-- (a volatile function's statement takes a snapshot of its own in READ
-- COMMITTED), so an enqueue that held a job behind the one that ended has
-- committed by then. It returns the job released, 0 for none, or -1 when
-- only_try is true and the lock was taken by another transaction: then it
-- waited for nothing and read nothing. (A transaction that releases several
-- sequences tries their locks: waiting for one while it holds another
-- could deadlock with an enqueue of both.) A release notifies the queue's
-- idle claimers when it commits, as an enqueue does.
CREATE FUNCTION fenced_release_sequence(q text, k text, after bigint, only_try boolean) RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    released bigint;
BEGIN
    IF only_try THEN
        IF NOT pg_try_advisory_xact_lock(fenced_sequence_lock(q, k)) THEN
            RETURN -1;
        END IF;
    ELSE
        PERFORM pg_advisory_xact_lock(fenced_sequence_lock(q, k));
    END IF;
    UPDATE fenced_jobs j SET held = false
    WHERE j.id = (SELECT s.id FROM fenced_jobs s
            WHERE s.queue = q AND s.sequence_key = k AND s.id > after
                AND s.state IN ('queued', 'running', 'failed')
                AND NOT (s.state = 'failed' AND s.sequence_continue_on_failed)
            ORDER BY s.id LIMIT 1)
        AND j.held AND j.state = 'queued'
    RETURNING j.id INTO released;
    IF released IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM pg_notify('fenced_jobs', q); -- wakes idle claimers, as an enqueue does
    RETURN released;
END
$$;

-- Hold the queued jobs of today's sequences that are not their heads.
UPDATE fenced_jobs j SET held = true
WHERE j.state = 'queued' AND j.sequence_key IS NOT NULL AND EXISTS (
    SELECT 1 FROM fenced_jobs s
    WHERE s.queue = j.queue AND s.sequence_key = j.sequence_key AND s.id < j.id
        AND s.state IN ('queued', 'running', 'failed')
        AND NOT (s.state = 'failed' AND s.sequence_continue_on_failed));

-- Held jobs leave the claim's indexes.
DROP INDEX fenced_jobs_claim;
CREATE INDEX fenced_jobs_claim ON fenced_jobs (queue, priority, run_at, id) WHERE state = 'queued' AND NOT held;
DROP INDEX fenced_jobs_waiting;
CREATE INDEX fenced_jobs_waiting ON fenced_jobs (queue, kind, priority, run_at, id)
    WHERE state = 'queued' AND (fence > 0 OR seq IS NULL) AND NOT held;

-- The running jobs of a queue's sequences, which every limited pick reads
-- (runningSequencesSQL). Without an index of their own a generic plan read
-- them through fenced_jobs_sequence, every open job of the queue's
-- sequences in turn (250 ms a pick with 85,000 of them queued).
CREATE INDEX fenced_jobs_sequence_running ON fenced_jobs (queue, sequence_key)
    WHERE state = 'running' AND sequence_key IS NOT NULL;
