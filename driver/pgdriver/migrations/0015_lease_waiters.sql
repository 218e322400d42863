-- Campaigners waiting for a lease (docs/design.md §4.6, "Leader election").
-- A campaigner waiting for the lease has a row here until it wins the
-- lease, withdraws, or expires_at passes; the lease's last holder does not
-- win it back while another campaigner's row lasts. The rows decide who may
-- win a free lease, never a fence.
CREATE TABLE fenced_lease_waiters (
    name       text        NOT NULL CHECK (octet_length(name) BETWEEN 1 AND 200),
    owner      text        NOT NULL CHECK (octet_length(owner) BETWEEN 1 AND 200),
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (name, owner)
);
