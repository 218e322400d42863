"""Resources: values kept under a key, each write guarded by a fence.

A put is accepted when its fence is not below the fence stored with the key
(the first put of a key takes any fence), and stores that fence. A put with
a lower fence -- a writer whose lease was taken over -- raises
:class:`StaleError` and changes nothing. With an ``operation_id`` a put is
idempotent: repeating it (after an :class:`UnknownOutcomeError`, say)
replays the first one's answer with ``replayed`` set instead of writing
again.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Mapping, Optional, Union

from ._wire import db_time, parse_time, seg

if TYPE_CHECKING:
    from .client import Client

__all__ = ["Resource", "ResourceWrite", "Resources"]


@dataclass
class ResourceWrite:
    """The answer of a put: the fence it stored and the version it created;
    ``replayed`` when an earlier put with the same operation id answered."""

    key: str
    fence: int
    version: int
    replayed: bool = False
    db_time: Optional[datetime] = None

    @classmethod
    def from_json(cls, b: Mapping[str, Any]) -> "ResourceWrite":
        return cls(key=str(b.get("key", "")), fence=int(b.get("fence", 0)), version=int(b.get("version", 0)),
                   replayed=bool(b.get("replayed", False)), db_time=db_time(b))


@dataclass
class Resource:
    """A resource as stored: ``value`` in bytes (``text`` decodes it as
    UTF-8), the fence of its last write, its version and when it was
    written."""

    key: str
    value: bytes
    fence: int
    version: int
    updated_at: Optional[datetime] = None
    db_time: Optional[datetime] = None

    @property
    def text(self) -> str:
        """The value as text (UTF-8; undecodable bytes replaced)."""
        return self.value.decode("utf-8", "replace")

    @classmethod
    def from_json(cls, b: Mapping[str, Any]) -> "Resource":
        if b.get("value_base64"):
            value = base64.b64decode(str(b["value_base64"]))
        else:
            value = str(b.get("value", "")).encode("utf-8")
        return cls(key=str(b.get("key", "")), value=value, fence=int(b.get("fence", 0)),
                   version=int(b.get("version", 0)), updated_at=parse_time(b.get("updated_at")), db_time=db_time(b))


class Resources:
    """The resource API of a :class:`Client` (``client.resources``)."""

    def __init__(self, client: "Client") -> None:
        self._c = client

    def put(self, key: str, value: Union[str, bytes], fence: int, operation_id: Optional[str] = None) -> ResourceWrite:
        """Write ``value`` under ``key`` with ``fence`` (the fence of the lease
        that guards the key). The server takes text: bytes must be UTF-8.
        Raises :class:`StaleError` when a write with a higher fence came
        first."""
        if isinstance(value, bytes):
            value = value.decode("utf-8")  # UnicodeDecodeError: the HTTP API stores text only
        body = {"value": value, "fence": fence}
        if operation_id is not None:
            body["operation_id"] = operation_id
        return ResourceWrite.from_json(self._c.request("PUT", "/v1/resources/%s" % seg(key), body))

    def get(self, key: str) -> Resource:
        """The stored resource; :class:`NotFoundError` when never written."""
        return Resource.from_json(self._c.request("GET", "/v1/resources/%s" % seg(key)))
