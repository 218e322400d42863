"""Shared setup of the live tests: the server comes from $FENCED_URL (and
$FENCED_TOKEN); without FENCED_URL every live test is skipped."""

from __future__ import annotations

import os
import secrets
import time
import unittest
from typing import Callable, TypeVar

from fenced_client import Client

T = TypeVar("T")


def client() -> Client:
    url = os.environ.get("FENCED_URL")
    if not url:
        raise unittest.SkipTest("FENCED_URL is not set: no live fenced serve to test against")
    return Client(url, timeout=10.0)


def unique(prefix: str) -> str:
    """A name no earlier run used, so the tests can share a server."""
    return "%s-%s" % (prefix, secrets.token_hex(4))


def eventually(what: str, probe: Callable[[], T], timeout: float = 15.0, every: float = 0.05) -> T:
    """probe() until it returns something true; fail after timeout seconds."""
    end = time.monotonic() + timeout
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError("%s: not within %.0fs (last: %r)" % (what, timeout, got))
        time.sleep(every)
