"""Helpers for the JSON forms of ``fenced serve`` (internal)."""

from __future__ import annotations

import urllib.parse
from datetime import datetime, timezone
from typing import Any, Mapping, Optional


def parse_time(value: Any) -> Optional[datetime]:
    """An RFC 3339 time of the server (``2026-11-29T12:04:05.608000Z``) as an
    aware datetime in UTC; None for null, absent or empty."""
    if not value:
        return None
    text = str(value)
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    # Python before 3.11 takes only 3 or 6 fractional digits: pad or cut.
    head, sep, rest = text.partition(".")
    if sep:
        digits = ""
        i = 0
        while i < len(rest) and rest[i].isdigit():
            digits += rest[i]
            i += 1
        text = head + "." + (digits + "000000")[:6] + rest[i:]
    t = datetime.fromisoformat(text)
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.astimezone(timezone.utc)


def format_time(t: datetime) -> str:
    """t as the server takes it: RFC 3339 in UTC (a naive t is taken as UTC)."""
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def seg(s: str) -> str:
    """s as one path segment."""
    return urllib.parse.quote(s, safe="")


def db_time(body: Mapping[str, Any]) -> Optional[datetime]:
    """The database clock reading the server put in an answer."""
    return parse_time(body.get("db_time"))
