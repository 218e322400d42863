-- A job's metadata (docs/design.md §6.2): a JSON object about the job given
-- at enqueue (trace context carried from the producer to the worker, a
-- tenant) and returned with every read of it. NULL when none was given.
-- The check accepts NULL explicitly (see migration 10); AND binds before
-- OR, so a NULL passes and any other value must be a valid JSON object.
ALTER TABLE fenced_jobs ADD COLUMN metadata TEXT
    CHECK (metadata IS NULL OR json_valid(metadata) AND json_type(metadata) = 'object');
