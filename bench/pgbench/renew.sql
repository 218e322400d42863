-- Renew: leaseRenewSQL (driver/pgdriver/lease.go), one autocommit conditional
-- UPDATE of this client's own lease (name 2000+client_id, fence 1, made by
-- bench/setup).
\set name 2000 + :client_id
\set fence 1
\set ttl 3600000000
UPDATE fenced_leases l
SET expires_at = clock_timestamp() + :ttl::bigint * interval '1 microsecond', updated_at = clock_timestamp()
WHERE l.name = :name AND l.owner = :owner AND l.fence = :fence AND NOT l.released AND l.expires_at > clock_timestamp()
RETURNING l.name, l.owner, l.fence, l.expires_at, l.released, true, l.expires_at - :ttl::bigint * interval '1 microsecond';
