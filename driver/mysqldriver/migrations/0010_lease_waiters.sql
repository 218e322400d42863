-- Campaigners waiting for a lease (docs/design.md §4.6, "Leader election").
-- A campaigner waiting for the lease has a row here until it wins the
-- lease, withdraws, or expires_at passes; the lease's last holder does not
-- win it back while another campaigner's row lasts. The rows decide who may
-- win a free lease, never a fence. Idempotent, as every migration must be.
CREATE TABLE IF NOT EXISTS fenced_lease_waiters (
    name       VARBINARY(200) NOT NULL CHECK (LENGTH(name) BETWEEN 1 AND 200),
    owner      VARBINARY(200) NOT NULL CHECK (LENGTH(owner) BETWEEN 1 AND 200),
    expires_at DATETIME(6)    NOT NULL,
    PRIMARY KEY (name, owner)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
