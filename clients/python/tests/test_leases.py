"""Leases and fenced resources against a live fenced serve."""

from __future__ import annotations

import unittest

from fenced_client import HeldError, InvalidError, Lease, NotFoundError, StaleError

from live import client, eventually, unique


class LeaseTest(unittest.TestCase):
    def setUp(self) -> None:
        self.c = client()

    def test_acquire_renew_release(self) -> None:
        name = unique("lease")
        a = self.c.leases.acquire(name, "a", ttl_ms=5000)
        self.assertEqual((a.name, a.owner, a.held, a.released), (name, "a", True, False))
        self.assertGreaterEqual(a.fence, 1)
        self.assertIsNotNone(a.expires_at)
        self.assertIsNotNone(a.db_time)
        r = self.c.leases.renew(a, ttl_ms=10000)
        self.assertEqual((r.fence, r.held), (a.fence, True))
        assert r.expires_at is not None and a.expires_at is not None
        self.assertGreater(r.expires_at, a.expires_at)
        with self.assertRaises(HeldError) as held:
            self.c.leases.acquire(name, "b", ttl_ms=5000)
        self.assertEqual((held.exception.status, held.exception.code), (409, "lease_held"))
        self.assertEqual((held.exception.owner, held.exception.fence), ("a", a.fence))
        self.assertIn(name, [l.name for l in self.c.leases.list()])
        rel = self.c.leases.release(a)
        self.assertTrue(rel.released)
        self.assertFalse(self.c.leases.get(name).held)
        b = self.c.leases.acquire(name, "b", ttl_ms=5000)
        self.assertEqual(b.fence, a.fence + 1)
        with self.assertRaises(StaleError):
            self.c.leases.renew(a)  # released, then taken over

    def test_stale_renew_after_takeover(self) -> None:
        name = unique("lease")
        a = self.c.leases.acquire(name, "a", ttl_ms=200)
        eventually("a's lease expires", lambda: not self.c.leases.get(name).held)
        b = self.c.leases.acquire(name, "b", ttl_ms=30000)
        self.assertEqual(b.fence, a.fence + 1)
        with self.assertRaises(StaleError) as stale:
            self.c.leases.renew(a)
        e = stale.exception
        self.assertEqual((e.status, e.code, e.kind, e.name), (409, "stale_fence", "lease", name))
        self.assertEqual((e.your_fence, e.current_fence, e.current_owner), (a.fence, b.fence, "b"))
        self.assertEqual(e.reason, "superseded")
        with self.assertRaises(StaleError):
            self.c.leases.release(a)
        # A lease rebuilt from a stored name, owner and fence renews as well.
        self.assertEqual(self.c.leases.renew(Lease(name, "b", b.fence)).fence, b.fence)

    def test_errors(self) -> None:
        with self.assertRaises(NotFoundError) as nf:
            self.c.leases.get(unique("never"))
        self.assertEqual((nf.exception.status, nf.exception.code), (404, "not_found"))
        with self.assertRaises(InvalidError) as inv:
            self.c.leases.acquire(unique("lease"), "a", ttl_ms=0)
        self.assertEqual((inv.exception.status, inv.exception.field), (400, "ttl_ms"))


class ResourceTest(unittest.TestCase):
    def setUp(self) -> None:
        self.c = client()

    def test_fenced_put_and_stale_put(self) -> None:
        key = unique("report")
        a = self.c.leases.acquire(key, "a", ttl_ms=200)
        w1 = self.c.resources.put(key, "draft by a", a.fence)
        self.assertEqual((w1.key, w1.fence, w1.version, w1.replayed), (key, a.fence, 1, False))
        eventually("a's lease expires", lambda: not self.c.leases.get(key).held)
        b = self.c.leases.acquire(key, "b", ttl_ms=30000)
        w2 = self.c.resources.put(key, "final by b", b.fence, operation_id="op-b-1")
        self.assertEqual((w2.fence, w2.version), (b.fence, 2))
        again = self.c.resources.put(key, "final by b", b.fence, operation_id="op-b-1")
        self.assertEqual((again.version, again.replayed), (2, True))
        with self.assertRaises(StaleError) as stale:
            self.c.resources.put(key, "late by a", a.fence)
        e = stale.exception
        self.assertEqual((e.kind, e.name, e.your_fence, e.current_fence), ("resource", key, a.fence, b.fence))
        got = self.c.resources.get(key)
        self.assertEqual((got.text, got.value, got.fence, got.version), ("final by b", b"final by b", b.fence, 2))
        with self.assertRaises(NotFoundError):
            self.c.resources.get(unique("missing"))


if __name__ == "__main__":
    unittest.main()


class SemaphoreTest(unittest.TestCase):
    def setUp(self) -> None:
        self.c = client()

    def test_slots_fences_and_a_stale_holder(self) -> None:
        name = unique("sem")
        a = self.c.semaphores.acquire(name, "a", slots=2, ttl_ms=5000)
        b = self.c.semaphores.acquire(name, "b", slots=2, ttl_ms=5000)
        self.assertEqual((a.held, b.held), (True, True))
        self.assertEqual({a.slot, b.slot}, {0, 1})
        self.assertGreater(b.fence, a.fence)
        with self.assertRaises(HeldError):
            self.c.semaphores.acquire(name, "c", slots=2, ttl_ms=5000)
        sem = self.c.semaphores.get(name)
        self.assertEqual((sem.slots, sorted(h.owner for h in sem.holders)), (2, ["a", "b"]))
        self.assertIn(name, [s.name for s in self.c.semaphores.list()])
        self.assertEqual(self.c.semaphores.renew(a, ttl_ms=10000).fence, a.fence)
        self.assertTrue(self.c.semaphores.release(a).released)
        c = self.c.semaphores.acquire(name, "c", slots=2, ttl_ms=5000)
        self.assertGreater(c.fence, b.fence)
        with self.assertRaises(StaleError):
            self.c.semaphores.renew(a)  # released: a's grant is over
        with self.assertRaises(NotFoundError):
            self.c.semaphores.get(unique("never"))
