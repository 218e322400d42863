-- An operation id is recorded with a digest of its write's fence and value,
-- so that a repeat carrying other arguments is refused instead of being
-- answered with the first outcome. Ids recorded before have none (NULL) and
-- are not checked.
--
-- Idempotent, as every migration must be (one cut short after its DDL
-- committed is run again): MySQL 8 has no ADD COLUMN IF NOT EXISTS, so the
-- column is added only when the catalog does not list it yet.
SET @fenced_add_digest = IF(EXISTS (SELECT 1 FROM information_schema.COLUMNS
        WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'fenced_resource_ops' AND COLUMN_NAME = 'digest'),
    'DO 0',
    'ALTER TABLE fenced_resource_ops ADD COLUMN digest VARBINARY(32) NULL');
PREPARE fenced_add_digest FROM @fenced_add_digest;
EXECUTE fenced_add_digest;
DEALLOCATE PREPARE fenced_add_digest;
