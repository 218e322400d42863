"""The job queue, a takeover's stale completion, and the worker, against a
live fenced serve (whose maintenance recovers expired attempts every
second)."""

from __future__ import annotations

import threading
import unittest
from typing import Any, Dict, List, Optional

from fenced_client import (InvalidError, JobContext, JobStateError, NotFoundError, StaleError,
                           UniqueConflictError, Worker)

from live import client, eventually, unique


class JobTest(unittest.TestCase):
    def setUp(self) -> None:
        self.c = client()
        self.queue = unique("q")

    def state(self, job_id: int) -> str:
        return self.c.jobs.get(job_id).job.state

    def test_enqueue_claim_complete(self) -> None:
        key = unique("welcome-ann")  # idempotency keys are server-wide, not per queue
        j = self.c.jobs.enqueue("email", {"to": "ann"}, queue=self.queue, idempotency_key=key, max_attempts=3)
        self.assertEqual((j.kind, j.args, j.queue, j.state, j.existing, j.max_attempts),
                         ("email", {"to": "ann"}, self.queue, "queued", False, 3))
        again = self.c.jobs.enqueue("email", {"to": "ann"}, queue=self.queue, idempotency_key=key)
        self.assertEqual((again.id, again.existing), (j.id, True))
        other = self.c.jobs.enqueue("sms", queue=self.queue)
        self.assertEqual(other.args, {})
        got = self.c.jobs.claim(self.queue, "w1", kinds=["email"], limit=10, lease_ms=30000)
        self.assertEqual([x.id for x in got], [j.id])
        (job,) = got
        self.assertEqual((job.state, job.attempt, job.owner), ("running", 1, "w1"))
        hb = self.c.jobs.heartbeat(job.id, job.fence, lease_ms=30000)
        self.assertEqual((hb.id, hb.fence, hb.cancel_requested), (job.id, job.fence, False))
        self.c.jobs.progress(job.id, job.fence, stage="sending", counters={"sent": 1})
        self.assertEqual(self.c.jobs.get(job.id).job.progress["stage"], "sending")
        done = self.c.jobs.complete(job.id, job.fence, {"sent": True})
        self.assertEqual((done.id, done.fence), (job.id, job.fence))
        h = self.c.jobs.get(job.id)
        self.assertEqual((h.job.state, h.job.output, len(h.attempts)), ("succeeded", {"sent": True}, 1))
        self.assertEqual(h.attempts[0].fence, job.fence)
        page = self.c.jobs.list(queue=self.queue, state="queued")
        self.assertEqual([x.id for x in page.jobs], [other.id])
        self.assertEqual(sorted(x.id for x in self.c.jobs.iter(queue=self.queue)), sorted([j.id, other.id]))
        self.assertEqual(self.c.jobs.cancel(other.id).state, "cancelled")
        with self.assertRaises(JobStateError) as conflict:
            self.c.jobs.cancel(j.id)
        self.assertEqual((conflict.exception.status, conflict.exception.code), (409, "conflict"))
        with self.assertRaises(NotFoundError):
            self.c.jobs.get(10**12)

    def test_fail_and_snooze(self) -> None:
        j = self.c.jobs.enqueue("flaky", queue=self.queue, max_attempts=5)
        (a1,) = self.c.jobs.claim(self.queue, "w1")
        self.c.jobs.fail(a1.id, a1.fence, "boom", retry_in_ms=0)
        h = self.c.jobs.get(j.id)
        self.assertEqual((h.job.state, h.job.error, h.attempts[0].error), ("queued", "boom", "boom"))
        (a2,) = eventually("the retry is claimable", lambda: self.c.jobs.claim(self.queue, "w1"))
        self.assertEqual(a2.fence, a1.fence + 1)
        with self.assertRaises(StaleError):
            self.c.jobs.complete(a1.id, a1.fence)  # the first attempt's fence
        self.c.jobs.snooze(a2.id, a2.fence, delay_ms=0)
        (a3,) = eventually("the snoozed job is claimable", lambda: self.c.jobs.claim(self.queue, "w1"))
        self.c.jobs.fail(a3.id, a3.fence, "give up", discard=True)
        self.assertEqual(self.state(j.id), "failed")

    def test_repeated_end_is_replayed(self) -> None:
        """An end sent again (its reply lost) is answered as the first was,
        replayed; another end of the ended attempt is stale."""
        j = self.c.jobs.enqueue("report", queue=self.queue)
        (a,) = self.c.jobs.claim(self.queue, "w1")
        first = self.c.jobs.complete(a.id, a.fence, {"n": 1})
        again = self.c.jobs.complete(a.id, a.fence, {"n": 1})
        self.assertEqual((first.replayed, again.replayed, again.db_time), (False, True, first.db_time))
        with self.assertRaises(StaleError) as other:
            self.c.jobs.complete(a.id, a.fence, {"n": 2})
        self.assertEqual(other.exception.reason, "not_running")
        with self.assertRaises(StaleError):
            self.c.jobs.fail(a.id, a.fence, "late")
        self.assertEqual(self.c.jobs.get(j.id).job.output, {"n": 1})
        k = self.c.jobs.enqueue("report", queue=self.queue, max_attempts=3)
        (b,) = self.c.jobs.claim(self.queue, "w1")
        failed = self.c.jobs.fail(b.id, b.fence, "boom", retry_in_ms=3600000)
        again = self.c.jobs.fail(b.id, b.fence, "boom", retry_in_ms=3600000)
        self.assertEqual((failed.replayed, again.replayed, again.db_time), (False, True, failed.db_time))
        h = self.c.jobs.get(k.id)
        self.assertEqual((h.job.state, len(h.attempts)), ("queued", 1))

    def test_stale_completion_after_takeover(self) -> None:
        """A claims with a short lease and stalls without heartbeats; the
        server's recovery takes the job back and B claims it with the next
        fence; A's completion is refused as stale and changes nothing, B's
        stands."""
        j = self.c.jobs.enqueue("report", {"n": 1}, queue=self.queue)
        (a,) = self.c.jobs.claim(self.queue, "A", lease_ms=200)
        b_jobs = eventually("recovery gives the job to B",
                            lambda: self.c.jobs.claim(self.queue, "B", lease_ms=30000, wait_ms=1000))
        (b,) = b_jobs
        self.assertEqual((b.id, b.fence, b.attempt, b.owner), (j.id, a.fence + 1, 2, "B"))
        with self.assertRaises(StaleError) as stale:
            self.c.jobs.complete(a.id, a.fence, {"by": "A"})
        e = stale.exception
        self.assertEqual((e.status, e.code, e.kind, e.name), (409, "stale_fence", "job", str(j.id)))
        self.assertEqual((e.your_fence, e.current_fence, e.current_owner), (a.fence, b.fence, "B"))
        with self.assertRaises(StaleError):
            self.c.jobs.heartbeat(a.id, a.fence)
        with self.assertRaises(StaleError):
            self.c.jobs.fail(a.id, a.fence, "late")
        self.assertEqual(self.state(j.id), "running")  # A's writes changed nothing
        self.c.jobs.complete(b.id, b.fence, {"by": "B"})
        h = self.c.jobs.get(j.id)
        self.assertEqual((h.job.state, h.job.output, h.job.fence), ("succeeded", {"by": "B"}, b.fence))


class WorkerTest(unittest.TestCase):
    def setUp(self) -> None:
        self.c = client()
        self.queue = unique("wq")

    def run_until(self, w: Worker, what: str, done: Any, timeout: float = 20.0) -> None:
        t = w.start()
        try:
            eventually(what, done, timeout=timeout)
        finally:
            w.stop()
            t.join(30)
        self.assertFalse(t.is_alive(), "the worker did not stop")

    def test_tags_filter_and_metadata_merge(self) -> None:
        ab = self.c.jobs.enqueue("tagged", queue=self.queue, tags=["t:a", "t:b"])
        self.assertEqual(ab.tags, ["t:a", "t:b"])
        a = self.c.jobs.enqueue("tagged", queue=self.queue, tags=["t:a"], metadata={"n": 1, "x": {"y": 1}})
        self.assertIsNone(self.c.jobs.enqueue("tagged", queue=self.queue).tags)
        ids = lambda **kw: [j.id for j in self.c.jobs.list(queue=self.queue, **kw).jobs]
        self.assertEqual(ids(tags=["t:a"]), [ab.id, a.id])
        self.assertEqual(ids(tags=["t:a", "t:b"], all_tags=True), [ab.id])
        jobs = self.c.jobs.claim(self.queue, "py-tags", limit=3)
        got = {j.id: j for j in jobs}
        merged = self.c.jobs.merge_metadata(a.id, got[a.id].fence, {"n": None, "x": {"z": 2}})
        self.assertEqual(merged, {"x": {"y": 1, "z": 2}})
        with self.assertRaises(StaleError):
            self.c.jobs.merge_metadata(a.id, got[a.id].fence + 1, {"late": True})
        self.assertEqual(self.c.jobs.get(a.id).job.metadata, {"x": {"y": 1, "z": 2}})

    def test_metadata_carries_trace_context(self) -> None:
        tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        j = self.c.jobs.enqueue("traced", {"n": 1}, queue=self.queue, metadata={"traceparent": tp, "tenant": "42"})
        self.assertEqual(j.metadata, {"traceparent": tp, "tenant": "42"})
        self.assertEqual(self.c.jobs.get(j.id).job.metadata, {"traceparent": tp, "tenant": "42"})
        plain = self.c.jobs.enqueue("traced", {"n": 2}, queue=self.queue)
        self.assertIsNone(plain.metadata)
        w = Worker(self.c, self.queue, owner="py-traced", concurrency=1, lease_ms=5000, wait_ms=500)
        seen: Dict[int, Optional[str]] = {}

        @w.handler("traced")
        def traced(ctx: JobContext) -> Any:
            seen[ctx.id] = ctx.traceparent
            return None

        self.run_until(w, "both jobs run", lambda: len(seen) == 2)
        self.assertEqual(seen, {j.id: tp, plain.id: None})

    def test_timeout_fails_the_attempt_and_it_is_retried(self) -> None:
        j = self.c.jobs.enqueue("slow", queue=self.queue, timeout_ms=300,
                                retry={"base_ms": 1, "max_ms": 1, "jitter": 0})
        self.assertEqual((j.timeout_ms, j.retry), (300, {"base_ms": 1, "max_ms": 1, "jitter": 0}))
        plain = self.c.jobs.enqueue("other", queue=self.queue)
        self.assertEqual((plain.timeout_ms, plain.retry), (None, None))
        w = Worker(self.c, self.queue, owner="py-timeout", concurrency=1, lease_ms=5000, wait_ms=500)
        reasons: Dict[int, Optional[str]] = {}

        @w.handler("slow")
        def slow(ctx: JobContext) -> Any:
            if ctx.job.attempt == 1:
                ctx.stopped.wait(30)
                reasons[ctx.job.attempt] = ctx.stop_reason
                return {"too": "late"}  # after the timeout: not a completion
            return None

        @w.handler("other")
        def other(ctx: JobContext) -> Any:
            return None

        self.run_until(w, "the retry succeeds", lambda: self.state(j.id) == "succeeded")
        h = self.c.jobs.get(j.id)
        self.assertEqual([a.outcome for a in h.attempts], ["retry", "succeeded"])
        self.assertEqual(h.attempts[0].error, "job timed out after 300ms")
        self.assertEqual(reasons, {1: "timeout"})

    def test_two_kinds_and_not_a_third(self) -> None:
        w = Worker(self.c, self.queue, owner="py-two-kinds", concurrency=3, lease_ms=5000, wait_ms=500)
        seen: List[str] = []
        lock = threading.Lock()

        @w.handler("add")
        def add(ctx: JobContext) -> Any:
            with lock:
                seen.append("add")
            return {"sum": ctx.args["a"] + ctx.args["b"], "fence": ctx.fence}

        def upper(ctx: JobContext) -> Any:
            with lock:
                seen.append("upper")
            if ctx.args.get("fail"):
                raise ValueError("cannot upper %r" % ctx.args["s"])
            return ctx.args["s"].upper()

        w.register("upper", upper)
        self.assertEqual(w.kinds, ["add", "upper"])
        other = self.c.jobs.enqueue("invoice", {"order": 1}, queue=self.queue)  # first in claim order
        adds = [self.c.jobs.enqueue("add", {"a": i, "b": 10}, queue=self.queue) for i in range(3)]
        up = self.c.jobs.enqueue("upper", {"s": "abc"}, queue=self.queue)
        bad = self.c.jobs.enqueue("upper", {"s": "x", "fail": True}, queue=self.queue, max_attempts=1)

        def finished() -> bool:
            return all(self.state(j.id) in ("succeeded", "failed") for j in adds + [up, bad])

        self.run_until(w, "the add and upper jobs end", finished)
        for i, j in enumerate(adds):
            h = self.c.jobs.get(j.id).job
            self.assertEqual((h.state, h.output, h.owner), ("succeeded", {"sum": i + 10, "fence": h.fence}, "py-two-kinds"))
        self.assertEqual(self.c.jobs.get(up.id).job.output, "ABC")
        b = self.c.jobs.get(bad.id).job
        self.assertEqual(b.state, "failed")
        self.assertIn("ValueError: cannot upper 'x'", b.error)
        untouched = self.c.jobs.get(other.id)
        self.assertEqual((untouched.job.state, untouched.job.attempt, untouched.attempts), ("queued", 0, []))
        s = w.stats
        self.assertEqual((s.claimed, s.completed, s.failed, s.stale, s.errors), (5, 4, 1, 0, 0))
        self.assertEqual(sorted(seen), ["add"] * 3 + ["upper"] * 2)

    def state(self, job_id: int) -> str:
        return self.c.jobs.get(job_id).job.state

    def test_heartbeats_keep_a_long_job(self) -> None:
        """The handler runs 3 s under a 1.5 s lease: only the heartbeats
        (every 0.3 s) keep the attempt current; without them it would be
        stale from 1.5 s on, and recovered within a second after."""
        w = Worker(self.c, self.queue, lease_ms=1500, heartbeat_every=0.3, wait_ms=500)
        stopped: List[bool] = []

        @w.handler("slow")
        def slow(ctx: JobContext) -> str:
            stopped.append(ctx.stopped.wait(3.0))
            ctx.progress(stage="done")
            return "slept"

        j = self.c.jobs.enqueue("slow", queue=self.queue)
        stats = w.run(max_jobs=1)
        self.assertEqual(stopped, [False])
        self.assertEqual((stats.completed, stats.stale), (1, 0))
        h = self.c.jobs.get(j.id)
        self.assertEqual((h.job.state, h.job.attempt, h.job.output, len(h.attempts)), ("succeeded", 1, "slept", 1))

    def test_handler_merges_metadata_under_its_fence(self) -> None:
        """A handler merges into its job's metadata (RFC 7396: None removes
        a key); the merge is the attempt's fenced write, so after the job
        ended it is refused as stale and changes nothing."""
        w = Worker(self.c, self.queue, wait_ms=500)
        merged: List[Dict[str, Any]] = []
        kept: List[JobContext] = []

        @w.handler("tagme")
        def tagme(ctx: JobContext) -> str:
            merged.append(ctx.merge_metadata({"step": 2, "draft": None}))
            kept.append(ctx)
            return "ok"

        j = self.c.jobs.enqueue("tagme", queue=self.queue, metadata={"tenant": "t1", "draft": True})
        stats = w.run(max_jobs=1)
        self.assertEqual(stats.completed, 1)
        self.assertEqual(merged, [{"tenant": "t1", "step": 2}])
        with self.assertRaises(StaleError):
            kept[0].merge_metadata({"late": True})
        self.assertEqual(self.c.jobs.get(j.id).job.metadata, {"tenant": "t1", "step": 2})

    def test_stale_attempt_stops_the_handler(self) -> None:
        """The worker heartbeats only after 1 s, past its 300 ms lease: the
        heartbeat is refused as stale (the lease expired, and recovery may
        have given the job to B already), the handler sees ``stopped``
        (reason stale), and the worker's completion is refused and counted
        stale, never as success. B claims the job after recovery, and B's
        completion stands."""
        w = Worker(self.c, self.queue, owner="A", lease_ms=300, heartbeat_every=1.0, wait_ms=500)
        seen: Dict[str, Any] = {}
        started = threading.Event()

        @w.handler("report")
        def report(ctx: JobContext) -> Any:
            seen["fence"] = ctx.fence
            started.set()
            seen["stopped"] = ctx.stopped.wait(20)
            seen["reason"] = ctx.stop_reason
            return {"by": "A"}

        j = self.c.jobs.enqueue("report", queue=self.queue)
        t = threading.Thread(target=lambda: seen.setdefault("stats", w.run(max_jobs=1)))
        t.start()
        try:
            self.assertTrue(started.wait(15), "the worker never ran the job")
            (b,) = eventually("recovery gives the job to B",
                              lambda: self.c.jobs.claim(self.queue, "B", lease_ms=30000, wait_ms=500))
        finally:
            t.join(30)
        self.assertFalse(t.is_alive())
        self.assertEqual((seen["stopped"], seen["reason"]), (True, "stale"))
        self.assertEqual(b.fence, seen["fence"] + 1)
        stats = seen["stats"]
        self.assertEqual((stats.completed, stats.failed, stats.stale), (0, 0, 1))
        self.assertEqual(self.state(j.id), "running")
        self.c.jobs.complete(b.id, b.fence, {"by": "B"})
        h = self.c.jobs.get(j.id).job
        self.assertEqual((h.state, h.output, h.owner), ("succeeded", {"by": "B"}, "B"))

    def test_cancel_stops_the_handler(self) -> None:
        w = Worker(self.c, self.queue, lease_ms=5000, heartbeat_every=0.2, wait_ms=500)
        started = threading.Event()
        reason: List[Optional[str]] = []

        @w.handler("long")
        def long(ctx: JobContext) -> None:
            started.set()
            ctx.stopped.wait(20)
            reason.append(ctx.stop_reason)
            ctx.raise_if_stopped()

        j = self.c.jobs.enqueue("long", queue=self.queue)
        t = w.start(max_jobs=1)
        self.assertTrue(started.wait(15))
        self.assertTrue(self.c.jobs.cancel(j.id).cancel_requested)
        t.join(30)
        self.assertEqual(reason, ["cancelled"])
        self.assertEqual(w.stats.cancelled, 1)
        self.assertEqual(self.state(j.id), "cancelled")

    def test_retry_of_a_cancelled_job(self) -> None:
        j = self.c.jobs.enqueue("k", queue=self.queue, max_attempts=1)
        with self.assertRaises(JobStateError):
            self.c.jobs.retry(j.id)  # queued: nothing to retry
        self.assertEqual(self.c.jobs.cancel(j.id).state, "cancelled")
        again = self.c.jobs.retry(j.id)
        # max_attempts more than the attempts made: none was
        self.assertEqual((again.state, again.max_attempts), ("queued", 1))
        self.assertEqual([c.id for c in self.c.jobs.claim(self.queue, "w1")], [j.id])

    def test_unique_jobs(self) -> None:
        """A unique enqueue returns the job holding the slot; a retry that
        would collide with a newer job is refused, naming it."""
        kind = unique("sync")
        u = {"args_keys": ["user"], "by_period_ms": 3600000, "by_queue": True, "by_state": ("queued", "running")}
        first = self.c.jobs.enqueue(kind, {"user": 7, "n": 1}, queue=self.queue, unique=u)
        again = self.c.jobs.enqueue(kind, {"user": 7, "n": 2}, queue=self.queue, unique=u)
        other = self.c.jobs.enqueue(kind, {"user": 8}, queue=self.queue, unique=u)
        self.assertEqual((first.existing, again.existing, again.id, other.existing), (False, True, first.id, False))
        self.assertNotEqual(other.id, first.id)
        self.c.jobs.cancel(other.id)
        (a,) = self.c.jobs.claim(self.queue, "w1")
        self.assertEqual(a.id, first.id)
        self.c.jobs.fail(a.id, a.fence, "boom", discard=True)
        newer = self.c.jobs.enqueue(kind, {"user": 7}, queue=self.queue, unique=u)
        self.assertFalse(newer.existing)
        with self.assertRaises(UniqueConflictError) as e:
            self.c.jobs.retry(first.id)
        self.assertEqual((e.exception.status, e.exception.code, e.exception.existing_id), (409, "unique_conflict", newer.id))
        self.assertEqual(self.state(first.id), "failed")
        with self.assertRaises(InvalidError):
            self.c.jobs.enqueue(kind, queue=self.queue, unique={"by_state": ["queued"]})
        with self.assertRaises(TypeError):
            self.c.jobs.enqueue(kind, queue=self.queue, unique=["by_args"])  # type: ignore[arg-type]

    def test_limits_and_pauses(self) -> None:
        q = self.queue
        self.assertEqual(self.c.jobs.set_limit(q, per_key=1, global_=5)["global"], 5)
        self.c.jobs.set_limit(q, per_key=2, kind="email")
        self.c.jobs.set_limit(q, per_key=3, key="acct-1")
        with self.assertRaises(ValueError):
            self.c.jobs.set_limit(q, global_=1, key="acct-1")
        got = {(l["kind"], l["concurrency_key"]): l["per_key"] for l in self.c.jobs.limits(q)}
        self.assertEqual(got, {("", ""): 1, ("email", ""): 2, ("", "acct-1"): 3})
        self.c.jobs.delete_limit(q, key="acct-1")
        with self.assertRaises(NotFoundError):
            self.c.jobs.delete_limit(q, key="acct-1")
        self.assertEqual(len(self.c.jobs.limits(q)), 2)

        j = self.c.jobs.enqueue("k", queue=q)
        self.assertTrue(self.c.jobs.pause(q))
        self.assertFalse(self.c.jobs.pause(q))  # already paused
        self.assertIn(q, self.c.jobs.pauses())
        self.assertEqual(self.c.jobs.claim(q, "w1"), [])
        self.assertTrue(self.c.jobs.resume(q))
        self.assertNotIn(q, self.c.jobs.pauses())
        self.assertEqual([c.id for c in self.c.jobs.claim(q, "w1")], [j.id])

    def test_delete(self) -> None:
        j = self.c.jobs.enqueue("k", queue=self.queue)
        claimed = self.c.jobs.claim(self.queue, "w1")
        self.assertEqual([c.id for c in claimed], [j.id])
        self.c.jobs.delete(j.id)
        with self.assertRaises(NotFoundError):
            self.c.jobs.get(j.id)
        with self.assertRaises(NotFoundError):
            self.c.jobs.complete(j.id, claimed[0].fence)
        with self.assertRaises(NotFoundError):
            self.c.jobs.delete(j.id)


if __name__ == "__main__":
    unittest.main()
