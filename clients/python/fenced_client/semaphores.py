"""Semaphores: N fenced slots under one name.

Each grant of a slot carries a fence, strictly increasing per name and never
reused, to pass with the protected writes of whoever holds it, as a lease's
fence is passed. An acquire with every slot held raises :class:`HeldError`;
a renew or release with a grant that is no longer current raises
:class:`StaleError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, List, Mapping, Optional

from ._wire import db_time, parse_time, seg
from .leases import DEFAULT_TTL_MS

if TYPE_CHECKING:
    from .client import Client

__all__ = ["Slot", "Semaphore", "Semaphores"]


@dataclass
class Slot:
    """One grant of a slot as the server decided it: ``name``, ``owner``
    and ``fence`` identify it (build one with just those to renew or
    release a grant whose fence you stored). ``held`` is whether it was
    unreleased and unexpired by the database clock at ``db_time``."""

    name: str
    owner: str
    fence: int
    slot: int = 0
    held: bool = False
    released: bool = False
    expires_at: Optional[datetime] = None
    db_time: Optional[datetime] = None

    @classmethod
    def from_json(cls, b: Mapping[str, Any]) -> "Slot":
        return cls(
            name=str(b.get("name", "")),
            owner=str(b.get("owner", "")),
            fence=int(b.get("fence", 0)),
            slot=int(b.get("slot", 0)),
            held=bool(b.get("held", False)),
            released=bool(b.get("released", False)),
            expires_at=parse_time(b.get("expires_at")),
            db_time=db_time(b),
        )


@dataclass
class Semaphore:
    """A semaphore's state: its number of slots, the last fence granted
    under its name, and the grants held at ``db_time`` by slot number."""

    name: str
    slots: int
    fence: int
    holders: List[Slot] = field(default_factory=list)
    db_time: Optional[datetime] = None

    @classmethod
    def from_json(cls, b: Mapping[str, Any]) -> "Semaphore":
        return cls(
            name=str(b.get("name", "")),
            slots=int(b.get("slots", 0)),
            fence=int(b.get("fence", 0)),
            holders=[Slot.from_json(h) for h in b.get("holders") or []],
            db_time=db_time(b),
        )


class Semaphores:
    """The semaphore API of a :class:`Client` (``client.semaphores``)."""

    def __init__(self, client: "Client") -> None:
        self._c = client

    def acquire(self, name: str, owner: str, slots: int, ttl_ms: int = DEFAULT_TTL_MS) -> Slot:
        """Take one of the ``slots`` slots of ``name`` for ``owner``: a new
        grant with the next fence when one is free, or the grant ``owner``
        holds already, extended. Raises :class:`HeldError` when every slot
        is held."""
        return Slot.from_json(self._c.request("POST", "/v1/semaphores/%s/acquire" % seg(name),
                                              {"owner": owner, "slots": slots, "ttl_ms": ttl_ms}))

    def renew(self, grant: Slot, ttl_ms: int = DEFAULT_TTL_MS) -> Slot:
        """Extend the grant (name, owner, fence) to ``ttl_ms`` from the
        database's now. Raises :class:`StaleError` once it is no longer
        current."""
        return Slot.from_json(self._c.request("POST", "/v1/semaphores/%s/renew" % seg(grant.name),
                                              {"owner": grant.owner, "fence": grant.fence, "ttl_ms": ttl_ms}))

    def release(self, grant: Slot) -> Slot:
        """Give the grant's slot back. Raises :class:`StaleError` when it is
        no longer current."""
        return Slot.from_json(self._c.request("POST", "/v1/semaphores/%s/release" % seg(grant.name),
                                              {"owner": grant.owner, "fence": grant.fence}))

    def get(self, name: str) -> Semaphore:
        """The semaphore ``name``. Raises :class:`NotFoundError` when no slot
        of it was ever granted."""
        return Semaphore.from_json(self._c.request("GET", "/v1/semaphores/%s" % seg(name)))

    def list(self) -> List[Semaphore]:
        """Every semaphore."""
        b = self._c.request("GET", "/v1/semaphores")
        return [Semaphore.from_json(s) for s in b.get("semaphores") or []]
