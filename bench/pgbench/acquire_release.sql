-- AcquireRelease: leaseAcquireSQL then leaseReleaseSQL (driver/pgdriver/lease.go),
-- two autocommit statements, on this client's own lease (name 1000+client_id,
-- as drivertest.BenchName). The acquire's RETURNING columns are aliased only so
-- \gset can name them; the release uses the fence the acquire returned.
\set name 1000 + :client_id
\set ttl 3600000000
INSERT INTO fenced_leases AS l (name, owner, fence, expires_at, released, updated_at)
SELECT :name, :owner, m.fence_floor + 1, clock_timestamp() + :ttl::bigint * interval '1 microsecond', false, clock_timestamp()
FROM fenced_meta m
ON CONFLICT (name) DO UPDATE SET
    owner      = EXCLUDED.owner,
    fence      = CASE WHEN l.owner = EXCLUDED.owner AND NOT l.released AND l.expires_at > clock_timestamp()
                      THEN l.fence ELSE l.fence + 1 END,
    expires_at = clock_timestamp() + :ttl::bigint * interval '1 microsecond',
    released   = false,
    updated_at = clock_timestamp()
WHERE l.released OR l.expires_at <= clock_timestamp() OR l.owner = EXCLUDED.owner
RETURNING l.name AS name, l.owner AS owner, l.fence AS fence, l.expires_at AS expires_at, l.released AS released, true AS held, l.expires_at - :ttl::bigint * interval '1 microsecond' AS decided_at
\gset
UPDATE fenced_leases l
SET released = true, expires_at = LEAST(l.expires_at, clock_timestamp()), updated_at = clock_timestamp()
WHERE l.name = :name AND l.owner = :owner AND l.fence = :fence
RETURNING l.name, l.owner, l.fence, l.expires_at, l.released, false, l.updated_at;
