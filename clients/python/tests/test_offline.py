"""Tests that need no fenced serve: the error mapping, times, the transport
against a stub server (token, a lost reply, an unreachable server), and the
worker's registration."""

from __future__ import annotations

import json
import threading
import unittest
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, Dict, List, Tuple

import fenced_client
from fenced_client import (
    Client,
    ConflictError,
    FencedError,
    HeldError,
    InvalidError,
    JobStateError,
    NotFoundError,
    StaleError,
    UnauthorizedError,
    UnavailableError,
    UnknownOutcomeError,
    UnsupportedError,
    Worker,
)
from fenced_client._wire import format_time, parse_time
from fenced_client.errors import error_from_reply


class ErrorMappingTest(unittest.TestCase):
    def test_codes(self) -> None:
        for status, code, cls in [
            (400, "invalid", InvalidError),
            (401, "unauthorized", UnauthorizedError),
            (404, "not_found", NotFoundError),
            (409, "lease_held", HeldError),
            (409, "stale_fence", StaleError),
            (409, "conflict", JobStateError),
            (501, "not_supported", UnsupportedError),
            (503, "unknown_outcome", UnknownOutcomeError),
            (503, "unavailable", UnavailableError),
            (502, "http_502", UnavailableError),
            (418, "teapot", FencedError),
        ]:
            e = error_from_reply(status, {"error": code, "message": "m"})
            self.assertIs(type(e), cls, code)
            self.assertEqual((e.status, e.code, e.message), (status, code, "m"))
        self.assertIsInstance(error_from_reply(409, {"error": "stale_fence"}), ConflictError)
        self.assertTrue(error_from_reply(503, {"error": "unavailable"}).retryable)
        self.assertFalse(error_from_reply(503, {"error": "unknown_outcome"}).retryable)
        self.assertFalse(error_from_reply(409, {"error": "stale_fence"}).retryable)
        e = error_from_reply(502, {}, "<html>bad gateway</html>")
        self.assertEqual((e.code, e.message), ("http_502", "<html>bad gateway</html>"))

    def test_stale_details(self) -> None:
        e = error_from_reply(409, {"error": "stale_fence", "message": "m", "kind": "job", "name": "7",
                                   "your_fence": 1, "current_fence": 2, "current_owner": "B", "reason": "superseded"})
        assert isinstance(e, StaleError)
        self.assertEqual((e.kind, e.name, e.your_fence, e.current_fence, e.current_owner, e.reason),
                         ("job", "7", 1, 2, "B", "superseded"))


class TimeTest(unittest.TestCase):
    def test_parse_and_format(self) -> None:
        t = parse_time("2026-11-29T12:04:05.608000Z")
        self.assertEqual(t, datetime(2026, 11, 29, 12, 4, 5, 608000, tzinfo=timezone.utc))
        self.assertEqual(parse_time("2026-11-29T12:04:05.6Z"), t.replace(microsecond=600000) if t else None)
        self.assertEqual(parse_time("2026-11-29T12:04:05Z"), datetime(2026, 11, 29, 12, 4, 5, tzinfo=timezone.utc))
        self.assertIsNone(parse_time(None))
        self.assertEqual(format_time(datetime(2026, 1, 2, 3, 4, 5)), "2026-01-02T03:04:05.000000Z")


class _Stub(BaseHTTPRequestHandler):
    """Answers from the test's script: (status, body or None to drop the
    connection); records each request."""

    script: List[Tuple[int, Any]] = []
    seen: List[Dict[str, Any]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        type(self).seen.append({"method": self.command, "path": self.path, "auth": self.headers.get("Authorization"),
                                "type": self.headers.get("Content-Type"), "body": json.loads(body) if body else None})
        status, out = type(self).script.pop(0)
        if out is None:
            self.close_connection = True
            self.wfile.flush()
            self.connection.close()
            return
        raw = json.dumps(out).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    do_GET = do_POST = do_PUT = _answer


class TransportTest(unittest.TestCase):
    def setUp(self) -> None:
        self.srv = HTTPServer(("127.0.0.1", 0), _Stub)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.addCleanup(self.srv.server_close)
        self.addCleanup(self.srv.shutdown)
        _Stub.script, _Stub.seen = [], []
        self.c = Client("http://127.0.0.1:%d/" % self.srv.server_address[1], token="a-token-of-16-chars", timeout=5)

    def test_token_body_and_errors(self) -> None:
        _Stub.script = [
            (200, {"name": "a b", "owner": "w", "fence": 3, "held": True, "expires_at": "2026-11-29T12:04:05.608000Z"}),
            (401, {"error": "unauthorized", "message": "a bearer token is required"}),
        ]
        lease = self.c.leases.acquire("a b", "w", ttl_ms=100)
        self.assertEqual((lease.fence, lease.held, lease.released), (3, True, False))
        seen = _Stub.seen[0]
        self.assertEqual((seen["method"], seen["path"], seen["auth"], seen["type"], seen["body"]),
                         ("POST", "/v1/leases/a%20b/acquire", "Bearer a-token-of-16-chars", "application/json",
                          {"owner": "w", "ttl_ms": 100}))
        with self.assertRaises(UnauthorizedError) as e:
            self.c.leases.get("x")
        self.assertEqual((e.exception.status, e.exception.message), (401, "a bearer token is required"))
        self.assertNotIn("a-token-of-16-chars", repr(self.c))

    def test_lost_reply(self) -> None:
        _Stub.script = [(200, None), (200, None)]
        with self.assertRaises(UnknownOutcomeError) as e:
            self.c.jobs.complete(1, 1, {"ok": True})
        self.assertEqual((e.exception.status, e.exception.code), (0, "reply_lost"))
        with self.assertRaises(UnavailableError):  # a read is safe to repeat
            self.c.jobs.get(1)

    def test_unreachable(self) -> None:
        port = self.srv.server_address[1]
        self.srv.shutdown()
        self.srv.server_close()
        with self.assertRaises(UnavailableError) as e:
            Client("http://127.0.0.1:%d" % port, timeout=2).jobs.enqueue("k")
        self.assertEqual((e.exception.code, e.exception.retryable), ("connection", True))

    def test_job_list_query(self) -> None:
        _Stub.script = [(200, {"jobs": [{"id": 5, "kind": "k", "args": {}, "state": "queued"}], "next_after": 5})]
        page = self.c.jobs.list(queue="q 1", state="queued", limit=1)
        self.assertEqual(([j.id for j in page.jobs], page.next_after), ([5], 5))
        self.assertEqual(_Stub.seen[0]["path"], "/v1/jobs?state=queued&queue=q+1&limit=1")


class WorkerSetupTest(unittest.TestCase):
    def test_registration(self) -> None:
        w = Worker(Client("http://127.0.0.1:1"), "q", {"b": lambda ctx: None})

        @w.handler("a")
        def a(ctx: fenced_client.JobContext) -> None:
            return None

        self.assertEqual(w.kinds, ["a", "b"])
        self.assertEqual(w.heartbeat_every, 10.0)  # a third of the default 30 s lease
        with self.assertRaises(ValueError):
            w.register("", a)
        with self.assertRaises(ValueError):
            Worker(Client("http://127.0.0.1:1")).run()  # no handlers
        with self.assertRaises(ValueError):
            Worker(Client("http://127.0.0.1:1"), concurrency=0)


if __name__ == "__main__":
    unittest.main()
