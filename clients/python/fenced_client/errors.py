"""The errors of the client, one class per error code of ``fenced serve``.

Every error answer of the server is ``{"error": code, "message": ..., ...}``
with details per code; :func:`error_from_reply` turns one into the matching
subclass of :class:`FencedError`. Failures of the connection itself become
:class:`UnavailableError` (the request never reached the server, or a read
found it unreachable) or :class:`UnknownOutcomeError` (a write was sent and
its reply lost: it may or may not have been applied).
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Type

__all__ = [
    "FencedError",
    "InvalidError",
    "UnauthorizedError",
    "ForbiddenError",
    "NotFoundError",
    "ConflictError",
    "HeldError",
    "StaleError",
    "JobStateError",
    "UniqueConflictError",
    "TooLargeError",
    "UnsupportedError",
    "UnavailableError",
    "UnknownOutcomeError",
    "error_from_reply",
]


class FencedError(Exception):
    """An error answer of the server, or a failure to get one.

    ``status`` is the HTTP status (0 when no answer came), ``code`` the
    server's stable error code (``"invalid"``, ``"not_found"``,
    ``"stale_fence"``, ...), ``message`` its text and ``body`` the whole
    decoded JSON answer (empty when there was none)."""

    def __init__(self, status: int, code: str, message: str, body: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__(f"{status} {code}: {message}" if status else f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body: Dict[str, Any] = dict(body or {})

    @property
    def retryable(self) -> bool:
        """Whether sending the same request again may succeed: true for an
        unreachable server, a 5xx other than an unknown outcome, 408 and
        429. An unknown outcome is not: the write may have been applied, so
        read the state first (or repeat it where a repeat is safe)."""
        if isinstance(self, UnknownOutcomeError):
            return False
        return self.status == 0 or self.status >= 500 or self.status in (408, 429)


class InvalidError(FencedError):
    """400 ``invalid``: the server refused the input; ``field`` names the
    offending field (or query parameter). Nothing was changed."""

    @property
    def field(self) -> str:
        return str(self.body.get("field", ""))


class UnauthorizedError(FencedError):
    """401 ``unauthorized``: no bearer token, or not one of the server's."""


class ForbiddenError(FencedError):
    """403 ``forbidden``: a cross-origin request, or a server without tokens
    that serves loopback clients only."""


class NotFoundError(FencedError):
    """404 ``not_found``: no such lease, resource, job or route."""


class ConflictError(FencedError):
    """A 409: the base of :class:`HeldError`, :class:`StaleError` and
    :class:`JobStateError`."""


class HeldError(ConflictError):
    """409 ``lease_held``: the acquire was refused because another owner
    holds the lease. ``owner``, ``fence`` and ``expires_at`` (text) say who
    holds it and until when."""

    @property
    def owner(self) -> str:
        return str(self.body.get("owner", ""))

    @property
    def fence(self) -> int:
        return int(self.body.get("fence", 0))

    @property
    def expires_at(self) -> str:
        return str(self.body.get("expires_at", ""))


class StaleError(ConflictError):
    """409 ``stale_fence``: the fence of the request is no longer current and
    nothing was changed. For a job it means the attempt is over for this
    worker: its lease expired and recovery took the job back (perhaps to
    another worker), or it already ended. Retrying cannot succeed.

    ``kind`` is ``"lease"``, ``"semaphore"``, ``"job"`` or ``"resource"``,
    ``name`` the lease name, job id or resource key, ``your_fence`` the
    request's fence, ``current_fence`` and ``current_owner`` what is current
    now, and ``reason`` one of ``superseded``, ``expired``, ``released``,
    ``not_running``, ``wrong_owner`` and ``never_granted``."""

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", ""))

    @property
    def name(self) -> str:
        return str(self.body.get("name", ""))

    @property
    def your_fence(self) -> int:
        return int(self.body.get("your_fence", 0))

    @property
    def current_fence(self) -> int:
        return int(self.body.get("current_fence", 0))

    @property
    def current_owner(self) -> str:
        return str(self.body.get("current_owner", ""))

    @property
    def reason(self) -> str:
        return str(self.body.get("reason", ""))


class JobStateError(ConflictError):
    """409 ``conflict``: the job's state forbids the operation (a cancel of
    a finished job). ``op``, ``id`` and ``state`` say which."""

    @property
    def state(self) -> str:
        return str(self.body.get("state", ""))


class UniqueConflictError(ConflictError):
    """409 ``unique_conflict``: a retry would put a unique job back into its
    unique states while another job holds its slot; nothing changed.
    ``existing_id`` is that job (0 when it left the slot since)."""

    @property
    def existing_id(self) -> int:
        return int(self.body.get("existing_id") or 0)


class TooLargeError(FencedError):
    """413 ``too_large``: the request body is over the server's limit."""


class UnsupportedError(FencedError):
    """501 ``not_supported`` (the server's backend does not offer it: jobs on
    etcd), or 415 ``unsupported_media_type``."""


class UnavailableError(FencedError):
    """The server or its database cannot be reached: a connection that
    failed (``status`` 0, ``code`` ``"connection"``), a read that timed out,
    or a 5xx other than ``unknown_outcome``. Retrying may help."""


class UnknownOutcomeError(FencedError):
    """A write whose outcome is not known: the server answered 503
    ``unknown_outcome`` (its database connection failed after the write was
    sent), or the reply itself was lost (``status`` 0, ``code``
    ``"reply_lost"``: the connection broke or timed out after the request was
    sent). It may or may not have been applied: read the state, or repeat it
    where a repeat is safe (a resource write with an operation id, an
    enqueue with an idempotency key)."""


_BY_CODE: Dict[str, Type[FencedError]] = {
    "invalid": InvalidError,
    "unauthorized": UnauthorizedError,
    "forbidden": ForbiddenError,
    "not_found": NotFoundError,
    "lease_held": HeldError,
    "stale_fence": StaleError,
    "conflict": JobStateError,
    "unique_conflict": UniqueConflictError,
    "too_large": TooLargeError,
    "unsupported_media_type": UnsupportedError,
    "not_supported": UnsupportedError,
    "unavailable": UnavailableError,
    "unknown_outcome": UnknownOutcomeError,
}


def error_from_reply(status: int, body: Mapping[str, Any], text: str = "") -> FencedError:
    """The error for an answer with HTTP status and decoded JSON body (empty
    when the body was not a JSON object; text is then the raw body)."""
    code = body.get("error")
    if not isinstance(code, str) or not code:
        code = "http_%d" % status
    message = body.get("message")
    if not isinstance(message, str):
        message = text[:200]
    cls = _BY_CODE.get(code)
    if cls is None:
        if status == 409:
            cls = ConflictError
        elif status >= 500:
            cls = UnavailableError
        else:
            cls = FencedError
    return cls(status, code, message, body)
