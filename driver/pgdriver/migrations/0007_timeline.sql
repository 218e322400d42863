-- The timeline of the server that last wrote here, as a connection with
-- fenced_promotion_advance set saw it: a connection that finds another one
-- (a standby was promoted, or the database restored) advances every fence
-- before it is used. NULL until such a connection records it.
ALTER TABLE fenced_meta ADD COLUMN timeline bigint;
