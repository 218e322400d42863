-- Unique jobs (docs/design.md §6.15): a unique job stores the key the
-- client computed (sha256 of its kind and chosen parts), the window of its
-- run_at (the bucket; 0 without a period) and the bitmask of its unique
-- states (queued 1, running 2, succeeded 4, failed 8, cancelled 16).
-- MySQL has no partial indexes: unique_slot, a virtual column, is the key
-- and bucket while the job's state is in its own set and NULL otherwise
-- (NULLs never collide), and a unique index on it holds the slot. A state
-- change that leaves the set frees it in the statement that makes it.
-- Jobs that are not unique have NULLs and no index entry worth a lookup.
--
-- Idempotent, as every migration must be: one ALTER, added only when the
-- catalog does not list the column.
SET @fenced_unique_jobs = IF(EXISTS (SELECT 1 FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'fenced_jobs' AND COLUMN_NAME = 'unique_key'),
    'DO 0',
    'ALTER TABLE fenced_jobs
        ADD COLUMN unique_key BINARY(32) NULL,
        ADD COLUMN unique_bucket BIGINT NULL,
        ADD COLUMN unique_states SMALLINT NULL,
        ADD COLUMN unique_slot VARBINARY(64) AS (CASE WHEN unique_key IS NOT NULL
            AND (unique_states & CASE state WHEN ''queued'' THEN 1 WHEN ''running'' THEN 2
                WHEN ''succeeded'' THEN 4 WHEN ''failed'' THEN 8 WHEN ''cancelled'' THEN 16 ELSE 0 END) <> 0
            THEN CONCAT(unique_key, CAST(unique_bucket AS BINARY)) END) VIRTUAL,
        ADD UNIQUE KEY fenced_jobs_unique (unique_slot)');
PREPARE fenced_unique_jobs FROM @fenced_unique_jobs;
EXECUTE fenced_unique_jobs;
DEALLOCATE PREPARE fenced_unique_jobs;
