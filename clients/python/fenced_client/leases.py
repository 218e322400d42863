"""Leases: a named lease has one holder at a time, and each grant a fence.

A fence is strictly increasing per lease name and never reused; pass it with
every protected write (a resource put, your own store's check) so that a
holder whose lease ran out -- and was taken over -- is refused. A renew or
release with a fence that is no longer current raises :class:`StaleError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, List, Mapping, Optional

from ._wire import db_time, parse_time, seg

if TYPE_CHECKING:
    from .client import Client

__all__ = ["Lease", "Leases", "DEFAULT_TTL_MS"]

DEFAULT_TTL_MS = 30000


@dataclass
class Lease:
    """One generation of a lease as the server decided it.

    ``name``, ``owner`` and ``fence`` identify the generation (build one with
    just those to renew or release a lease whose fence you stored).
    ``held`` is whether it was unreleased and unexpired by the database
    clock at ``db_time``; ``released`` whether it was released;
    ``advanced`` whether a fence advance ended it (``fence`` is then the
    floor no owner held). ``expires_at`` is by the database clock."""

    name: str
    owner: str
    fence: int
    held: bool = False
    released: bool = False
    advanced: bool = False
    expires_at: Optional[datetime] = None
    db_time: Optional[datetime] = None

    @classmethod
    def from_json(cls, b: Mapping[str, Any]) -> "Lease":
        return cls(
            name=str(b.get("name", "")),
            owner=str(b.get("owner", "")),
            fence=int(b.get("fence", 0)),
            held=bool(b.get("held", False)),
            released=bool(b.get("released", False)),
            advanced=bool(b.get("advanced", False)),
            expires_at=parse_time(b.get("expires_at")),
            db_time=db_time(b),
        )


class Leases:
    """The lease API of a :class:`Client` (``client.leases``)."""

    def __init__(self, client: "Client") -> None:
        self._c = client

    def acquire(self, name: str, owner: str, ttl_ms: int = DEFAULT_TTL_MS) -> Lease:
        """Take the lease ``name`` for ``owner`` for ``ttl_ms``: a new grant
        with the next fence when it is free (never held, released or
        expired), or the same grant extended when ``owner`` holds it already.
        Raises :class:`HeldError` when another owner holds it."""
        return Lease.from_json(self._c.request("POST", "/v1/leases/%s/acquire" % seg(name),
                                               {"owner": owner, "ttl_ms": ttl_ms}))

    def renew(self, lease: Lease, ttl_ms: int = DEFAULT_TTL_MS) -> Lease:
        """Extend the generation ``lease`` names (name, owner, fence) to
        ``ttl_ms`` from the database's now. Raises :class:`StaleError` when
        it is no longer current: it expired, was released, or another owner
        took the lease over (``reason`` says which); the caller must stop
        acting as the holder."""
        return Lease.from_json(self._c.request("POST", "/v1/leases/%s/renew" % seg(lease.name),
                                               {"owner": lease.owner, "fence": lease.fence, "ttl_ms": ttl_ms}))

    def release(self, lease: Lease) -> Lease:
        """End the generation ``lease`` names, so another owner may acquire at
        once. Raises :class:`StaleError` when it is no longer current."""
        return Lease.from_json(self._c.request("POST", "/v1/leases/%s/release" % seg(lease.name),
                                               {"owner": lease.owner, "fence": lease.fence}))

    def get(self, name: str) -> Lease:
        """The lease's last generation; :class:`NotFoundError` when it was
        never acquired."""
        return Lease.from_json(self._c.request("GET", "/v1/leases/%s" % seg(name)))

    def list(self) -> List[Lease]:
        """Every lease's last generation (the server's maintainer holds
        ``fenced:maintenance`` beside yours)."""
        b = self._c.request("GET", "/v1/leases")
        return [Lease.from_json(x) for x in b.get("leases") or []]
