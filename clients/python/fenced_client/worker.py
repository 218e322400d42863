"""A worker: claims jobs of the kinds it has handlers for and runs them.

Register one handler per kind (``@worker.handler("email")`` or a dict), then
``worker.run()``. The worker claims only the registered kinds -- the claim
names them, so a job of another kind stays queued for a worker that runs
it -- and runs each job's handler in a thread pool of ``concurrency``
threads. A background thread heartbeats each running attempt
``heartbeat_every`` seconds after its claim and after each heartbeat
(default: a third of ``lease_ms``). When a
heartbeat is refused as stale (the lease expired, recovery took the job back,
perhaps to another worker) or says the job was asked to cancel, the worker
sets that attempt's ``JobContext.stopped`` event: the handler should stop
and return (or raise); whatever it writes from then on is refused.

The handler's return value (any JSON value) completes the attempt, with the
attempt's fence; an exception fails it with its text (the server retries it
with backoff while attempts remain). A completion or failure refused as
stale is logged and counted in ``stats.stale``; it is never taken for
success, and never retried: the job is someone else's now.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, List, Mapping, Optional

from .client import Client
from .errors import FencedError, NotFoundError, StaleError
from .jobs import DEFAULT_LEASE_MS, Job

__all__ = ["Worker", "JobContext", "JobStopped", "WorkerStats", "Handler"]

log = logging.getLogger("fenced_client.worker")


class JobStopped(Exception):
    """Raised by :meth:`JobContext.raise_if_stopped` once the attempt is
    stale or cancelled; a handler may let it propagate."""


class JobContext:
    """What a handler gets for one attempt.

    ``job`` is the claimed job (``args``, ``kind``, ...) and ``fence`` the
    attempt's fence. ``stopped`` is set by the worker when the attempt must
    end early: ``stop_reason`` is then ``"stale"`` (the attempt is no longer
    current; any write of it is refused) or ``"cancelled"`` (the job was asked
    to cancel; the worker ends it cancelled when the handler returns)."""

    def __init__(self, client: Client, job: Job) -> None:
        self.client = client
        self.job = job
        self.stopped = threading.Event()
        self.stop_reason: Optional[str] = None
        self._lock = threading.Lock()
        self._next_beat = 0.0  # time.monotonic() of the next heartbeat

    @property
    def id(self) -> int:
        return self.job.id

    @property
    def fence(self) -> int:
        return self.job.fence

    @property
    def kind(self) -> str:
        return self.job.kind

    @property
    def args(self) -> Any:
        return self.job.args

    def stop(self, reason: str) -> None:
        """Set ``stopped`` with ``reason`` (the first reason stays)."""
        with self._lock:
            if self.stop_reason is None:
                self.stop_reason = reason
        self.stopped.set()

    def raise_if_stopped(self) -> None:
        """Raise :class:`JobStopped` once ``stopped`` is set."""
        if self.stopped.is_set():
            raise JobStopped("job %d: attempt stopped (%s)" % (self.id, self.stop_reason))

    def progress(self, stage: Optional[str] = None, counters: Optional[Mapping[str, int]] = None) -> None:
        """Report the attempt's progress. A stale report sets ``stopped``
        and raises :class:`StaleError`."""
        try:
            self.client.jobs.progress(self.id, self.fence, stage, counters)
        except (StaleError, NotFoundError):
            self.stop("stale")
            raise


Handler = Callable[[JobContext], Any]


@dataclass
class WorkerStats:
    """Counts of attempts by how they ended: ``completed``; ``failed`` (the
    handler raised); ``cancelled`` (ended cancelled on request); ``stale``
    (the final write was refused as stale: the job is someone else's);
    ``errors`` (the final write failed otherwise: recovery will retry the
    job once its lease expires). ``claimed`` counts the attempts started."""

    claimed: int = 0
    completed: int = 0
    failed: int = 0
    cancelled: int = 0
    stale: int = 0
    errors: int = 0


class Worker:
    """Runs handlers for jobs of ``queue`` claimed as ``owner``.

    ``handlers`` maps kinds to handlers (more can be added with
    :meth:`handler` or :meth:`register` before :meth:`run`). Each attempt is
    claimed with a lease of ``lease_ms`` and heartbeated every
    ``heartbeat_every`` seconds (default ``lease_ms / 3``). A claim waits up
    to ``wait_ms`` for a job (the server's long-poll): :meth:`stop` takes
    effect when the claim in flight returns. ``owner`` defaults to
    ``py-<host>-<pid>-<random>``."""

    def __init__(
        self,
        client: Client,
        queue: str = "default",
        handlers: Optional[Mapping[str, Handler]] = None,
        *,
        owner: Optional[str] = None,
        concurrency: int = 1,
        lease_ms: int = DEFAULT_LEASE_MS,
        heartbeat_every: Optional[float] = None,
        wait_ms: int = 5000,
        logger: Optional[logging.Logger] = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.client = client
        self.queue = queue
        self.owner = owner or "py-%s-%d-%s" % (socket.gethostname(), os.getpid(), secrets.token_hex(3))
        self.concurrency = concurrency
        self.lease_ms = lease_ms
        self.heartbeat_every = heartbeat_every if heartbeat_every is not None else lease_ms / 3000.0
        self.wait_ms = wait_ms
        self.log = logger or log
        self._handlers: Dict[str, Handler] = {}
        self._started = False
        self._cond = threading.Condition()
        self._running: Dict[int, JobContext] = {}
        self._stopping = threading.Event()
        self._hb_wake = threading.Event()
        self._stats = WorkerStats()
        for kind, fn in (handlers or {}).items():
            self.register(kind, fn)

    # Registration.

    def register(self, kind: str, fn: Handler) -> None:
        """Run ``fn`` for jobs of ``kind``; only registered kinds are claimed."""
        if not isinstance(kind, str) or not kind:
            raise ValueError("a kind is a non-empty string")
        if not callable(fn):
            raise TypeError("the handler of %r is not callable" % kind)
        if self._started:
            raise RuntimeError("register handlers before run()")
        self._handlers[kind] = fn

    def handler(self, kind: str) -> Callable[[Handler], Handler]:
        """A decorator: ``@worker.handler("email")`` registers the function
        for jobs of kind ``email`` and returns it unchanged."""

        def register(fn: Handler) -> Handler:
            self.register(kind, fn)
            return fn

        return register

    @property
    def kinds(self) -> List[str]:
        """The kinds this worker claims."""
        return sorted(self._handlers)

    @property
    def stats(self) -> WorkerStats:
        """A copy of the counts so far."""
        with self._cond:
            return replace(self._stats)

    def running(self) -> List[JobContext]:
        """The attempts running now."""
        with self._cond:
            return list(self._running.values())

    # Running.

    def stop(self) -> None:
        """Stop claiming; :meth:`run` returns once the running handlers have
        ended and their attempts are completed or failed (they are
        heartbeated until then)."""
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()

    def start(self, max_jobs: Optional[int] = None) -> threading.Thread:
        """Run the worker in a background thread (see :meth:`run`)."""
        t = threading.Thread(target=self.run, kwargs={"max_jobs": max_jobs}, name="fenced-worker", daemon=True)
        t.start()
        return t

    def run(self, max_jobs: Optional[int] = None) -> WorkerStats:
        """Claim and run jobs until :meth:`stop` or, with ``max_jobs``, until
        that many attempts were claimed and ended. A claim that fails is
        retried every second while retrying can help (the server unreachable,
        a 5xx); any other refusal (401, 403, 404, 400) is raised once the
        running attempts have ended. Returns the counts."""
        if not self._handlers:
            raise ValueError("no handlers: register at least one kind")
        if self._started:
            raise RuntimeError("a Worker runs once")
        self._started = True
        kinds = self.kinds
        hb_stop = threading.Event()
        hb = threading.Thread(target=self._heartbeats, args=(hb_stop,), name="fenced-heartbeat", daemon=True)
        hb.start()
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="fenced-handler")
        claimed = 0
        try:
            while not self._stopping.is_set() and (max_jobs is None or claimed < max_jobs):
                with self._cond:
                    free = self.concurrency - len(self._running)
                    if free <= 0:
                        self._cond.wait(0.5)
                        continue
                limit = free if max_jobs is None else min(free, max_jobs - claimed)
                try:
                    jobs = self.client.jobs.claim(self.queue, self.owner, kinds=kinds, limit=limit,
                                                  lease_ms=self.lease_ms, wait_ms=self.wait_ms)
                except FencedError as e:
                    if not e.retryable:
                        raise
                    self.log.warning("claim from %s failed, retrying in 1s: %s", self.queue, e)
                    self._stopping.wait(1.0)
                    continue
                for job in jobs:
                    ctx = JobContext(self.client, job)
                    ctx._next_beat = time.monotonic() + self.heartbeat_every
                    with self._cond:
                        self._running[job.id] = ctx
                        self._stats.claimed += 1
                    claimed += 1
                    self._hb_wake.set()
                    pool.submit(self._run_one, ctx)
        finally:
            pool.shutdown(wait=True)
            hb_stop.set()
            self._hb_wake.set()
            hb.join()
        return self.stats

    def _count(self, what: str) -> None:
        with self._cond:
            setattr(self._stats, what, getattr(self._stats, what) + 1)

    def _run_one(self, ctx: JobContext) -> None:
        try:
            fn = self._handlers.get(ctx.kind)
            output: Any = None
            err: Optional[str] = None
            try:
                if fn is None:  # the claim names the kinds: only a server that ignored them sends another
                    raise LookupError("no handler for kind %r (this worker runs %s)" % (ctx.kind, self.kinds))
                output = fn(ctx)
            except Exception as e:  # the handler's failure fails the attempt
                err = "".join(traceback.format_exception_only(type(e), e)).strip()
                if not isinstance(e, JobStopped):
                    self.log.info("job %d (%s) failed: %s", ctx.id, ctx.kind, err)
            self._end(ctx, output, err)
        except Exception:  # never lose the slot to a bug in the worker itself
            self.log.exception("job %d: the worker failed", ctx.id)
            self._count("errors")
        finally:
            ctx.stopped.set()
            with self._cond:
                self._running.pop(ctx.id, None)
                self._cond.notify_all()

    def _end(self, ctx: JobContext, output: Any, err: Optional[str]) -> None:
        jobs = self.client.jobs
        cancelled = ctx.stop_reason == "cancelled"
        what = "completion" if err is None and not cancelled else "failure"
        try:
            if cancelled:
                jobs.fail(ctx.id, ctx.fence, err or "cancelled", discard=True)
                self._count("cancelled")
            elif err is None:
                jobs.complete(ctx.id, ctx.fence, output)
                self._count("completed")
            else:
                jobs.fail(ctx.id, ctx.fence, err)
                self._count("failed")
        except StaleError as e:
            self.log.warning("job %d: %s refused as stale (%s): your fence %d, current fence %d, owner %r",
                             ctx.id, what, e.reason, e.your_fence, e.current_fence, e.current_owner)
            ctx.stop("stale")
            self._count("stale")
        except FencedError as e:
            self.log.error("job %d: %s failed: %s; the job is retried once its lease expires", ctx.id, what, e)
            self._count("errors")

    def _heartbeats(self, done: threading.Event) -> None:
        """Heartbeat each running attempt heartbeat_every seconds after its
        claim and after its last heartbeat, until it ends or is found stale."""
        while not done.is_set():
            for ctx in self.running():
                if ctx.stop_reason == "stale" or ctx._next_beat > time.monotonic():
                    continue
                self._beat(ctx)
                ctx._next_beat = time.monotonic() + self.heartbeat_every
            waiting = [c._next_beat for c in self.running() if c.stop_reason != "stale"]
            pause = (min(waiting) - time.monotonic()) if waiting else self.heartbeat_every
            self._hb_wake.wait(max(pause, 0.001))
            self._hb_wake.clear()

    def _beat(self, ctx: JobContext) -> None:
        try:
            hb = self.client.jobs.heartbeat(ctx.id, ctx.fence, self.lease_ms)
        except (StaleError, NotFoundError) as e:
            self.log.warning("job %d: heartbeat refused, the attempt is lost: %s", ctx.id, e)
            ctx.stop("stale")
            return
        except FencedError as e:
            self.log.warning("job %d: heartbeat failed, retrying: %s", ctx.id, e)
            return
        if hb.cancel_requested and not ctx.stopped.is_set():
            self.log.info("job %d: cancel requested", ctx.id)
            ctx.stop("cancelled")
