-- A job's tags (docs/design.md §6.2): a JSON array of the short strings
-- given at enqueue, by which listings filter (JSON_OVERLAPS for any of them,
-- JSON_CONTAINS for all). NULL when none was given. No index: a listing
-- filtered by tags walks the jobs in id order, as its page does.
--
-- Idempotent, as every migration must be: MySQL 8 has no ADD COLUMN IF NOT
-- EXISTS, so the column is added only when the catalog does not list it.
SET @fenced_add_job_tags = IF(EXISTS (SELECT 1 FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'fenced_jobs' AND COLUMN_NAME = 'tags'),
    'DO 0',
    'ALTER TABLE fenced_jobs
        ADD COLUMN tags JSON NULL CHECK (tags IS NULL OR JSON_TYPE(tags) = ''ARRAY'')');
PREPARE fenced_add_job_tags FROM @fenced_add_job_tags;
EXECUTE fenced_add_job_tags;
DEALLOCATE PREPARE fenced_add_job_tags;
