-- A job's own policies (docs/design.md §6.15): the attempt timeout and retry
-- backoff given at enqueue, a JSON object {"timeout_us", "retry": {"base_us",
-- "max_us", "jitter"}} whose absent keys are unset. NULL when none was
-- given, so a job without policies costs nothing.
--
-- Idempotent, as every migration must be: MySQL 8 has no ADD COLUMN IF NOT
-- EXISTS, so the column is added only when the catalog does not list it.
SET @fenced_add_job_policy = IF(EXISTS (SELECT 1 FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'fenced_jobs' AND COLUMN_NAME = 'policy'),
    'DO 0',
    'ALTER TABLE fenced_jobs
        ADD COLUMN policy JSON NULL CHECK (policy IS NULL OR JSON_TYPE(policy) = ''OBJECT'')');
PREPARE fenced_add_job_policy FROM @fenced_add_job_policy;
EXECUTE fenced_add_job_policy;
DEALLOCATE PREPARE fenced_add_job_policy;
