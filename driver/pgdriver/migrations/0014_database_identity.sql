-- Where the database that issued these fences lives, beside its timeline
-- (0007): a connection with fenced_promotion_advance set that finds any of
-- them different is on a copy (a dump restored elsewhere, a clone) or on a
-- promoted standby, and advances every fence before it is used
-- (promotion.go). All three are copied by pg_dump with the row, so a
-- restored copy carries the values of the database it was dumped from.
--   system_identifier: the cluster's, from pg_control_system(); another
--     cluster (initdb) has another. NULL when the recording client could
--     not read it.
--   database_oid: the database's; another database, even a clone made
--     with CREATE DATABASE … TEMPLATE, has another.
--   meta_oid: fenced_meta's own table oid; a restore creates the table
--     again, with a new oid, even into the database it was dumped from.
-- NULL until recorded: Migrate records them in the transaction that
-- creates the schema, a check records them after its advance.
ALTER TABLE fenced_meta
    ADD COLUMN system_identifier bigint,
    ADD COLUMN database_oid bigint,
    ADD COLUMN meta_oid bigint;
