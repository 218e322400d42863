-- LeaseTx: what pgx.BeginFunc in (*Driver).LeaseTx sends (driver/pgdriver/leasetx.go):
-- BEGIN, leaseGuardSQL, the caller's one business UPDATE, COMMIT. This
-- client's own lease (name 3000+client_id, fence 1) and business row, made by
-- bench/setup.
\set name 3000 + :client_id
\set fence 1
BEGIN;
SELECT 1 FROM fenced_leases
WHERE name = :name AND owner = :owner AND fence = :fence AND NOT released AND expires_at > clock_timestamp()
FOR SHARE;
UPDATE fenced_bench_biz SET v = v + 1 WHERE k = :name;
COMMIT;
