-- An operation id is recorded with a digest of its write's fence and value,
-- so that a repeat carrying other arguments is refused instead of being
-- answered with the first outcome. Ids recorded before have none (NULL) and
-- are not checked.
ALTER TABLE fenced_resource_ops ADD COLUMN digest BLOB;
