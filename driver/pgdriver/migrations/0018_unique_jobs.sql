-- Unique jobs (docs/design.md §6.15): a unique job stores the key the
-- client computed (sha256 of its kind and chosen parts), the window of its
-- run_at (the bucket; 0 without a period) and the bitmask of its unique
-- states (queued 1, running 2, succeeded 4, failed 8, cancelled 16). The
-- partial unique index holds a job's (key, bucket) while its state is in
-- its own set: a state change that leaves the set frees the slot in the
-- statement that makes it. Jobs that are not unique have NULLs here and no
-- entry in the index, so adding the columns rewrites no row.
ALTER TABLE fenced_jobs
    ADD COLUMN unique_key bytea,
    ADD COLUMN unique_bucket bigint,
    ADD COLUMN unique_states integer,
    ADD CONSTRAINT fenced_jobs_unique_whole CHECK (unique_key IS NULL
        OR (octet_length(unique_key) = 32 AND unique_bucket IS NOT NULL AND unique_states IS NOT NULL));

CREATE UNIQUE INDEX fenced_jobs_unique ON fenced_jobs (unique_key, unique_bucket)
    WHERE unique_key IS NOT NULL AND (unique_states & CASE state WHEN 'queued' THEN 1 WHEN 'running' THEN 2
        WHEN 'succeeded' THEN 4 WHEN 'failed' THEN 8 WHEN 'cancelled' THEN 16 ELSE 0 END) <> 0;
