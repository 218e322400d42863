"""Workflows against a live fenced serve: enqueue, read, list, a task's
dependencies and outputs, a running task's fan-out (and a stale one after a
takeover), cancel, retry and delete, and a Worker's handler reading its
inputs and fanning out.

On a server whose backend has no workflows, every method raises
UnsupportedError (501), and that is what is tested, unless
$FENCED_WORKFLOWS=1 says the server must have them."""

from __future__ import annotations

import os
import threading
import unittest
from typing import Any, List

from fenced_client import (InvalidError, JobContext, NotFoundError, StaleError, UnsupportedError, Worker,
                           Workflow)

from live import client, eventually, unique


class WorkflowTest(unittest.TestCase):
    def setUp(self) -> None:
        self.c = client()
        self.queue = unique("wq")
        try:
            self.c.jobs.list_workflows(limit=1)
            self.supported = True
        except UnsupportedError:
            if os.environ.get("FENCED_WORKFLOWS") == "1":
                raise
            self.supported = False

    def etl(self) -> Workflow:
        q = self.queue
        return self.c.jobs.enqueue_workflow(unique("etl"), [
            {"name": "extract", "kind": "extract", "queue": q, "args": {"day": 1}},
            {"name": "transform", "kind": "transform", "queue": q, "depends_on": ("extract",), "priority": 2},
            {"name": "report", "kind": "report", "queue": q, "depends_on": ["transform"], "run_anyway": True},
        ])

    def test_unsupported(self) -> None:
        if self.supported:
            return  # the other tests use them
        calls = [lambda: self.c.jobs.enqueue_workflow("w", [{"name": "a", "kind": "a"}]),
                 lambda: self.c.jobs.get_workflow(1), lambda: self.c.jobs.list_workflows(),
                 lambda: self.c.jobs.cancel_workflow(1), lambda: self.c.jobs.retry_workflow(1),
                 lambda: self.c.jobs.delete_workflow(1), lambda: self.c.jobs.task_dependencies(1),
                 lambda: self.c.jobs.add_workflow_tasks(1, 1, [{"name": "a", "kind": "a"}])]
        for call in calls:
            with self.assertRaises(UnsupportedError) as e:
                call()
            self.assertEqual(e.exception.status, 501)

    def test_enqueue_read_run(self) -> None:
        if not self.supported:
            return
        w = self.etl()
        self.assertEqual((w.state, w.counts, len(w.tasks)), ("running", {"queued": 1, "pending": 2}, 3))
        self.assertEqual(w.task("transform").depends_on, ["extract"])
        self.assertTrue(w.task("report").run_anyway)
        got = self.c.jobs.get_workflow(w.id)
        self.assertEqual((got.id, got.name, [t.job_id for t in got.tasks]), (w.id, w.name, [t.job_id for t in w.tasks]))
        job = self.c.jobs.get(w.task("transform").job_id).job
        self.assertEqual((job.state, job.workflow_id, job.task_name), ("pending", w.id, "transform"))
        page = self.c.jobs.list_workflows(name=w.name)
        self.assertEqual(([x.id for x in page.workflows], page.workflows[0].tasks, page.next_after), ([w.id], [], None))
        newest = self.c.jobs.list_workflows(desc=True, limit=1)
        self.assertEqual(len(newest.workflows), 1)
        self.assertIsNone(newest.next_after)

        (a,) = self.c.jobs.claim(self.queue, "w1")
        self.assertEqual(a.id, w.task("extract").job_id)
        self.c.jobs.complete(a.id, a.fence, {"rows": 7})
        (dep,) = self.c.jobs.task_dependencies(w.task("transform").job_id)
        self.assertEqual((dep.name, dep.job_id, dep.state, dep.output), ("extract", a.id, "succeeded", {"rows": 7}))
        self.assertEqual(self.c.jobs.task_dependencies(a.id), [])
        self.assertEqual(self.c.jobs.get_workflow(w.id).task("transform").state, "queued")

    def test_refusals(self) -> None:
        if not self.supported:
            return
        with self.assertRaises(InvalidError) as cycle:
            self.c.jobs.enqueue_workflow("c", [{"name": "a", "kind": "a", "depends_on": ["b"]},
                                               {"name": "b", "kind": "b", "depends_on": ["a"]}])
        self.assertEqual(cycle.exception.field, "tasks")
        with self.assertRaises(InvalidError) as field:
            self.c.jobs.enqueue_workflow("c", [{"name": "a", "kind": "a", "sequence_key": "s"}])
        self.assertEqual(field.exception.field, "tasks[0].sequence_key")
        with self.assertRaises(TypeError):
            self.c.jobs.enqueue_workflow("c", {"name": "a", "kind": "a"})  # type: ignore[arg-type]
        for call in (lambda: self.c.jobs.get_workflow(10**12), lambda: self.c.jobs.cancel_workflow(10**12),
                     lambda: self.c.jobs.retry_workflow(10**12), lambda: self.c.jobs.delete_workflow(10**12),
                     lambda: self.c.jobs.task_dependencies(10**12)):
            with self.assertRaises(NotFoundError):
                call()

    def test_cancel_retry_delete(self) -> None:
        if not self.supported:
            return
        w = self.etl()
        c = self.c.jobs.cancel_workflow(w.id)
        self.assertEqual((c.state, c.counts), ("cancelled", {"cancelled": 3}))
        self.assertIsNotNone(c.cancelled_at)
        r = self.c.jobs.retry_workflow(w.id)
        self.assertEqual((r.state, r.cancelled_at, r.task("extract").state), ("running", None, "queued"))
        self.c.jobs.delete_workflow(w.id)
        with self.assertRaises(NotFoundError):
            self.c.jobs.get_workflow(w.id)

    def test_fan_out_and_stale_fan_out(self) -> None:
        """A's attempt at the task stalls and its lease runs out; recovery
        gives the task to B. A's fan-out is refused as stale and adds
        nothing; B's adds its tasks."""
        if not self.supported:
            return
        w = self.c.jobs.enqueue_workflow(unique("fan"), [{"name": "split", "kind": "split", "queue": self.queue}])
        (a,) = self.c.jobs.claim(self.queue, "A", lease_ms=200)
        (b,) = eventually("recovery gives the task to B",
                          lambda: self.c.jobs.claim(self.queue, "B", lease_ms=30000, wait_ms=1000))
        part = {"name": "part-1", "kind": "part", "queue": self.queue, "depends_on": ["split"]}
        with self.assertRaises(StaleError):
            self.c.jobs.add_workflow_tasks(a.id, a.fence, [part])
        self.assertEqual(len(self.c.jobs.get_workflow(w.id).tasks), 1)
        got = self.c.jobs.add_workflow_tasks(b.id, b.fence, [part, dict(part, name="part-2")])
        self.assertEqual(sorted(t.name for t in got.tasks), ["part-1", "part-2", "split"])
        self.assertEqual(got.task("part-1").state, "pending")
        self.c.jobs.complete(b.id, b.fence)
        with self.assertRaises(StaleError):
            self.c.jobs.add_workflow_tasks(b.id, b.fence, [dict(part, name="part-3")])

    def test_worker_reads_inputs_and_fans_out(self) -> None:
        if not self.supported:
            return
        seen: List[Any] = []
        done = threading.Event()

        def split(ctx: JobContext) -> Any:
            ctx.add_tasks([{"name": "sum", "kind": "sum", "queue": self.queue, "depends_on": ["split"]}])
            return {"n": 3}

        def total(ctx: JobContext) -> Any:
            seen.extend((d.name, d.output) for d in ctx.dependencies())
            done.set()
            return None

        w = self.c.jobs.enqueue_workflow(unique("sum"), [{"name": "split", "kind": "split", "queue": self.queue}])
        worker = Worker(self.c, self.queue, owner="py-wf", concurrency=1, lease_ms=5000, wait_ms=500)
        worker.register("split", split)
        worker.register("sum", total)
        t = threading.Thread(target=worker.run, daemon=True)
        t.start()
        try:
            self.assertTrue(done.wait(30), "the added task did not run")
        finally:
            worker.stop()
            t.join(30)
        self.assertEqual(seen, [("split", {"n": 3})])
        eventually("the workflow succeeds", lambda: self.c.jobs.get_workflow(w.id).state == "succeeded")


if __name__ == "__main__":
    unittest.main()
