-- A job's tags (docs/design.md §6.2): a short list of short strings given at
-- enqueue, by which listings filter. NULL when none was given, so adding the
-- column rewrites no row, and the index is partial: a job without tags adds
-- no entry to it and costs its insert nothing.
ALTER TABLE fenced_jobs ADD COLUMN IF NOT EXISTS tags text[]
    CHECK (tags IS NULL OR cardinality(tags) BETWEEN 1 AND 20);
CREATE INDEX IF NOT EXISTS fenced_jobs_tags ON fenced_jobs USING gin (tags) WHERE tags IS NOT NULL;

-- fenced_jsonb_merge_patch(target, patch) is the JSON Merge Patch of RFC 7396
-- (its MergePatch pseudo-code), which a running attempt's metadata merge
-- applies: a patch that is not an object replaces the target; otherwise a
-- target that is not an object is taken as {}, a key whose patch value is
-- null is removed, and every other key of the patch is merged into the
-- target's value of that key, recursively. The other backends have it
-- built in (SQLite json_patch, MySQL and MariaDB JSON_MERGE_PATCH).
CREATE OR REPLACE FUNCTION fenced_jsonb_merge_patch(target jsonb, patch jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    IF patch IS NULL OR jsonb_typeof(patch) <> 'object' THEN
        RETURN patch;
    END IF;
    IF target IS NULL OR jsonb_typeof(target) <> 'object' THEN
        target := '{}';
    END IF;
    RETURN COALESCE((
        SELECT jsonb_object_agg(COALESCE(p.key, t.key),
            CASE WHEN p.key IS NULL THEN t.value ELSE fenced_jsonb_merge_patch(t.value, p.value) END)
        FROM jsonb_each(target) t FULL JOIN jsonb_each(patch) p ON t.key = p.key
        WHERE p.key IS NULL OR jsonb_typeof(p.value) <> 'null'), '{}');
END
$$;
