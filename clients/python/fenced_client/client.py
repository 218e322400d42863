"""The HTTP transport: :class:`Client` sends JSON requests to ``fenced serve``.

It uses :mod:`urllib.request` only. Every request carries the bearer token,
if one is set; every error answer raises the matching :class:`FencedError`
subclass (see :mod:`fenced_client.errors`). The leases, resources and jobs
APIs are reached as ``client.leases``, ``client.resources`` and
``client.jobs``.
"""

from __future__ import annotations

import http.client
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional

from .errors import FencedError, UnavailableError, UnknownOutcomeError, error_from_reply

if TYPE_CHECKING:  # imported at run time in __init__, after the modules exist
    from .jobs import Jobs
    from .leases import Leases
    from .resources import Resources

__all__ = ["Client", "DEFAULT_URL"]

DEFAULT_URL = "http://127.0.0.1:8080"


class Client:
    """A client of one ``fenced serve``.

    ``url`` defaults to ``$FENCED_URL`` (else ``http://127.0.0.1:8080``) and
    ``token`` to ``$FENCED_TOKEN`` (no token when unset or empty). ``timeout``
    is the seconds one request may take; a claim that long-polls gets its
    wait on top. A Client holds no connection between requests and may be
    shared by threads."""

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, timeout: float = 30.0) -> None:
        self.url = (url or os.environ.get("FENCED_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else (os.environ.get("FENCED_TOKEN") or None)
        self.timeout = timeout
        from .jobs import Jobs
        from .leases import Leases
        from .resources import Resources
        from .semaphores import Semaphores

        self.leases: Leases = Leases(self)
        self.resources: Resources = Resources(self)
        self.jobs: Jobs = Jobs(self)
        self.semaphores: Semaphores = Semaphores(self)

    def __repr__(self) -> str:  # never shows the token
        return "Client(%r)" % self.url

    def request(
        self,
        method: str,
        path: str,
        body: Optional[Mapping[str, Any]] = None,
        query: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
    ) -> Dict[str, Any]:
        """Send one request and return the decoded JSON answer (an object).

        ``path`` starts with ``/v1/`` and has its segments escaped already;
        ``query`` items whose value is None are left out. Raises the
        :class:`FencedError` subclass of an error answer;
        :class:`UnavailableError` when the request did not get through (or a
        read's answer was lost); :class:`UnknownOutcomeError` when a write
        was sent and its answer lost."""
        url = self.url + path
        if query:
            items = []
            for k, v in query.items():
                if isinstance(v, (list, tuple)):
                    items.extend((k, str(x)) for x in v)  # a repeated parameter: tag=a&tag=b
                elif v is not None:
                    items.append((k, str(v)))
            if items:
                url += "?" + urllib.parse.urlencode(items)
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout if timeout is not None else self.timeout) as res:
                raw = res.read()
        except urllib.error.HTTPError as e:
            try:
                raw = e.read()
            except (OSError, http.client.HTTPException):
                raw = b""
            finally:
                e.close()
            text = raw.decode("utf-8", "replace")
            try:
                decoded = json.loads(text)
            except ValueError:
                decoded = None
            raise error_from_reply(e.code, decoded if isinstance(decoded, dict) else {}, text) from None
        except urllib.error.URLError as e:
            # Raised while connecting or sending: the request did not get through.
            raise UnavailableError(0, "connection", "%s %s: %s" % (method, self.url, e.reason)) from e
        except (OSError, http.client.HTTPException) as e:
            # The request was sent; the answer never came whole.
            if method == "GET":
                raise UnavailableError(0, "reply_lost", "%s %s: %s" % (method, path, e)) from e
            raise UnknownOutcomeError(0, "reply_lost", "%s %s: the reply was lost (%s); the request may or may "
                                      "not have been applied" % (method, path, e)) from e
        if not raw:
            return {}
        try:
            out = json.loads(raw)
        except ValueError as e:
            raise FencedError(200, "bad_reply", "%s %s: the answer is not JSON: %r" % (method, path, raw[:200])) from e
        if not isinstance(out, dict):
            raise FencedError(200, "bad_reply", "%s %s: the answer is not a JSON object" % (method, path))
        return out

    def health(self) -> Dict[str, Any]:
        """GET /healthz: the server's database ping."""
        return self.request("GET", "/healthz")
