-- ResourceWrite: resourceWriteSQL (driver/pgdriver/resource.go), one autocommit
-- INSERT ... ON CONFLICT ... WHERE on this client's own key (4000+client_id),
-- fence 1, value -D value=... (32 bytes, drivertest.BenchValue).
\set key 4000 + :client_id
\set fence 1
INSERT INTO fenced_resources AS r (key, value, fence, version, updated_at)
VALUES (:key, :value, :fence, 1, clock_timestamp())
ON CONFLICT (key) DO UPDATE SET
    value = EXCLUDED.value, fence = EXCLUDED.fence, version = r.version + 1, updated_at = EXCLUDED.updated_at
WHERE r.fence <= EXCLUDED.fence
RETURNING r.fence, r.version;
