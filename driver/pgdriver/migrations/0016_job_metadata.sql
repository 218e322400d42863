-- A job's metadata (docs/design.md §6.2): a JSON object about the job given
-- at enqueue (trace context carried from the producer to the worker, a
-- tenant) and returned with every read of it. NULL when none was given, so
-- adding the column rewrites no row.
ALTER TABLE fenced_jobs ADD COLUMN metadata jsonb CHECK (metadata IS NULL OR jsonb_typeof(metadata) = 'object');
