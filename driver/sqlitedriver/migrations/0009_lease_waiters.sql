-- Campaigners waiting for a lease (docs/design.md §4.6, "Leader election").
-- A campaigner waiting for the lease has a row here until it wins the
-- lease, withdraws, or expires_us passes; the lease's last holder does not
-- win it back while another campaigner's row lasts. The rows decide who may
-- win a free lease, never a fence. expires_us is integer microseconds since
-- the Unix epoch.
CREATE TABLE fenced_lease_waiters (
    name       TEXT    NOT NULL CHECK (length(CAST(name AS BLOB)) BETWEEN 1 AND 200),
    owner      TEXT    NOT NULL CHECK (length(CAST(owner AS BLOB)) BETWEEN 1 AND 200),
    expires_us INTEGER NOT NULL,
    PRIMARY KEY (name, owner)
) STRICT, WITHOUT ROWID;
