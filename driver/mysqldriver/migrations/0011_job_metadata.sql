-- A job's metadata (docs/design.md §6.2): a JSON object about the job given
-- at enqueue (trace context carried from the producer to the worker, a
-- tenant) and returned with every read of it. NULL when none was given.
--
-- Idempotent, as every migration must be: MySQL 8 has no ADD COLUMN IF NOT
-- EXISTS, so the column is added only when the catalog does not list it.
SET @fenced_add_job_metadata = IF(EXISTS (SELECT 1 FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'fenced_jobs' AND COLUMN_NAME = 'metadata'),
    'DO 0',
    'ALTER TABLE fenced_jobs
        ADD COLUMN metadata JSON NULL CHECK (metadata IS NULL OR JSON_TYPE(metadata) = ''OBJECT'')');
PREPARE fenced_add_job_metadata FROM @fenced_add_job_metadata;
EXECUTE fenced_add_job_metadata;
DEALLOCATE PREPARE fenced_add_job_metadata;
