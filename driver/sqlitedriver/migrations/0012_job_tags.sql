-- A job's tags (docs/design.md §6.2): a JSON array of the short strings
-- given at enqueue, by which listings filter (json_each). NULL when none
-- was given; the check accepts NULL explicitly (see migration 10). No index:
-- a listing filtered by tags walks the jobs in id order, as its page does.
ALTER TABLE fenced_jobs ADD COLUMN tags TEXT
    CHECK (tags IS NULL OR json_valid(tags) AND json_type(tags) = 'array');
