"""A worker: claims jobs of the kinds it has handlers for and runs them.

Register one handler per kind (``@worker.handler("email")`` or a dict), then
``worker.run()``. The worker claims only the registered kinds -- the claim
names them, so a job of another kind stays queued for a worker that runs
it -- and runs each job's handler in a thread of its own, at most
``concurrency`` at once. A background thread heartbeats each running attempt
``heartbeat_every`` seconds after its claim and after each heartbeat
(default: a third of ``lease_ms``). When a
heartbeat is refused as stale (the lease expired, recovery took the job back,
perhaps to another worker) or says the job was asked to cancel, the worker
sets that attempt's ``JobContext.stopped`` event: the handler should stop
and return (or raise); whatever it writes from then on is refused.

The handler's return value (any JSON value) completes the attempt, with the
attempt's fence; an exception fails it with its text (the server retries it
with backoff while attempts remain). A return value that is not JSON (a set,
an object, NaN), or that the server refuses to store, fails the attempt at
once for good (discarded: running it again would return the same), with an
error that says so. A completion or failure refused as stale is logged and
counted in ``stats.stale``; it is never taken for success: the job is
someone else's now.

The worker outlives its server: a claim or an end that fails because the
server cannot be reached, answers 5xx, or lost its reply (a restart, a
network blip) is retried with back-off (0.1 s doubling to 5 s) and logged. A
repeated end is safe: the server answers it as the first one was
(``replayed``). An end is retried while the attempt's lease could still hold
(``lease_ms`` after the handler returned).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import threading
import time
import traceback
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from .client import Client
from .errors import FencedError, InvalidError, NotFoundError, StaleError, TooLargeError, UnknownOutcomeError
from .jobs import DEFAULT_LEASE_MS, Job, JobWrite
from .workflows import TaskDependency, Workflow

__all__ = ["Worker", "JobContext", "JobStopped", "WorkerStats", "Handler"]

log = logging.getLogger("fenced_client.worker")

# The back-off of a claim or an end that failed and may succeed if sent
# again: the first wait, and the longest.
RETRY_FIRST = 0.1
RETRY_MAX = 5.0


def _may_repeat(e: FencedError) -> bool:
    """Whether a claim or an end that failed with e may be sent again: the
    server was unreachable or answered 5xx (``retryable``), or the reply was
    lost. A claim whose reply was lost may have taken jobs; recovery gives
    them back once their lease expires. An end whose reply was lost is
    answered, when repeated, as the first one was."""
    return e.retryable or isinstance(e, UnknownOutcomeError)


def _not_json(value: Any) -> Optional[str]:
    """Why value cannot be a job's output (None when it can): a value JSON
    cannot encode, or NaN or an infinity, which JSON has no form for."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as e:
        return "%s: %s" % (type(e).__name__, e)
    return None


def _duration(ms: int) -> str:
    """ms written as Go writes a time.Duration ("300ms", "1.5s", "5m0s"), so
    a timeout's error reads the same from every worker."""
    if ms < 1000:
        return "%dms" % ms
    h, rest = divmod(ms, 3600000)
    m, rest = divmod(rest, 60000)
    s = ("%d.%03d" % divmod(rest, 1000)).rstrip("0").rstrip(".")
    if h:
        return "%dh%dm%ss" % (h, m, s)
    if m:
        return "%dm%ss" % (m, s)
    return "%ss" % s


def _retry_in_ms(job: Job) -> Optional[int]:
    """The delay before a failed attempt of job runs again, from the job's
    own retry backoff (attempt n waits min(max, base·2^(n−1)) scaled by a
    random factor in [1−jitter, 1]); None, the server's backoff, when the
    job has none. The server adds it to the database's now in the statement
    that records the failure."""
    r = job.retry
    if not r:
        return None
    base, top, jitter = int(r.get("base_ms") or 1000), int(r.get("max_ms") or 3600000), float(r.get("jitter") or 0)
    d = top if job.attempt - 1 >= 62 else min(top, base << max(job.attempt - 1, 0))
    return int(d * (1 - jitter * secrets.SystemRandom().random()))


class JobStopped(Exception):
    """Raised by :meth:`JobContext.raise_if_stopped` once the attempt is
    stale or cancelled; a handler may let it propagate."""


class JobContext:
    """What a handler gets for one attempt.

    ``job`` is the claimed job (``args``, ``kind``, ...) and ``fence`` the
    attempt's fence. ``stopped`` is set by the worker when the attempt must
    end early: ``stop_reason`` is then ``"stale"`` (the attempt is no longer
    current; any write of it is refused), ``"cancelled"`` (the job was asked
    to cancel; the worker ends it cancelled when the handler returns) or
    ``"stopping"`` (the worker's :meth:`Worker.stop` deadline passed: the
    worker has given the attempt back already, and drops whatever the
    handler returns) or ``"timeout"`` (the job's ``timeout_ms`` passed: the
    attempt fails with "job timed out after ..." whatever the handler
    returns, and is retried; the lease is renewed until the handler
    returns, so a handler must watch ``stopped``: a thread cannot be
    stopped from outside)."""

    def __init__(self, client: Client, job: Job) -> None:
        self.client = client
        self.job = job
        self.stopped = threading.Event()
        self.stop_reason: Optional[str] = None
        self._lock = threading.Lock()
        self._next_beat = 0.0  # time.monotonic() of the next heartbeat
        # "running" until the handler returned ("ending": the worker writes
        # its outcome) or the worker gave the attempt back ("released").
        self._state = "running"
        self._returned = False  # the handler returned: a timeout after it is none

    def _leave(self, state: str) -> bool:
        """Move from running to state; False when already left."""
        with self._lock:
            if self._state != "running":
                return False
            self._state = state
            return True

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

    @property
    def metadata(self) -> Dict[str, Any]:
        """The job's metadata (an empty dict when it has none)."""
        return dict(self.job.metadata or {})

    @property
    def traceparent(self) -> Optional[str]:
        """The W3C traceparent its producer put in the job's metadata, to
        continue the producer's trace in the handler; None when none."""
        v = (self.job.metadata or {}).get("traceparent")
        return v if isinstance(v, str) else None

    def _time_out(self) -> None:
        """The job's timeout passed: stop the attempt, unless its handler
        returned before."""
        with self._lock:
            if self._returned:
                return
            if self.stop_reason is None:
                self.stop_reason = "timeout"
        self.stopped.set()

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

    def merge_metadata(self, patch: Mapping[str, Any]) -> Dict[str, Any]:
        """Merge ``patch`` into the job's metadata (a JSON Merge Patch, RFC
        7396: None removes a key) under this attempt's fence, and return the
        merged metadata. A stale merge sets ``stopped`` and raises
        :class:`StaleError`; nothing is merged."""
        try:
            return self.client.jobs.merge_metadata(self.id, self.fence, patch)
        except (StaleError, NotFoundError):
            self.stop("stale")
            raise

    def dependencies(self) -> List[TaskDependency]:
        """The dependencies of this task (a job of a workflow), by name: each
        one's state, and its output once it succeeded; [] for a job that is
        no task."""
        return self.client.jobs.task_dependencies(self.id)

    def add_tasks(self, tasks: Sequence[Mapping[str, Any]]) -> Workflow:
        """Add ``tasks`` to this task's workflow under this attempt's fence
        (fan-out) and return the workflow. A stale addition sets ``stopped``
        and raises :class:`StaleError`; nothing is added."""
        try:
            return self.client.jobs.add_workflow_tasks(self.id, self.fence, tasks)
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
    job once its lease expires); ``released`` (given back when the worker
    stopped: still running at :meth:`Worker.stop`'s deadline, or claimed as
    it stopped). ``claimed`` counts the attempts started."""

    claimed: int = 0
    completed: int = 0
    failed: int = 0
    cancelled: int = 0
    stale: int = 0
    errors: int = 0
    released: int = 0


class Worker:
    """Runs handlers for jobs of ``queue`` claimed as ``owner``.

    ``handlers`` maps kinds to handlers (more can be added with
    :meth:`handler` or :meth:`register` before :meth:`run`). Each attempt is
    claimed with a lease of ``lease_ms`` and heartbeated every
    ``heartbeat_every`` seconds (default ``lease_ms / 3``). A claim waits up
    to ``wait_ms`` for a job (the server's long-poll): the claim in flight
    when :meth:`stop` is called returns first, and jobs it took are given
    back. ``owner`` defaults to ``py-<host>-<pid>-<random>``."""

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
        self._deadline: Optional[float] = None  # time.monotonic() of stop's deadline
        self._past_deadline = threading.Event()
        self._finished = threading.Event()
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

    def stop(self, timeout: Optional[float] = None) -> None:
        """Stop claiming, and return at once; :meth:`run` returns once every
        running attempt has ended. Without ``timeout`` the running handlers
        go on until they return, heartbeated, and their attempts are
        completed or failed. With ``timeout`` (seconds), each handler still
        running that long after the call is cancelled: its
        ``JobContext.stopped`` is set with ``stop_reason`` ``"stopping"``, and
        the worker gives its attempt back at once -- snoozed, so the job runs
        again at once (on any worker) without counting the attempt -- and
        stops heartbeating it. Python cannot end a thread: a handler that
        never looks at ``stopped`` keeps running in its (daemon) thread, but
        whatever it returns or writes for that attempt is dropped or refused
        as stale, and :meth:`run` no longer waits for it. An end still being
        retried at the deadline is given up then."""
        if timeout is not None and timeout < 0:
            raise ValueError("timeout must not be negative")
        with self._cond:
            self._stopping.set()
            if timeout is not None:
                at = time.monotonic() + timeout
                if self._deadline is None or at < self._deadline:
                    self._deadline = at
                    threading.Thread(target=self._cancel_at, args=(at,), name="fenced-stop", daemon=True).start()
            self._cond.notify_all()

    def _cancel_at(self, at: float) -> None:
        """At stop's deadline, give back every attempt still running."""
        if self._finished.wait(max(at - time.monotonic(), 0.0)):
            return
        with self._cond:
            if self._deadline != at:  # an earlier deadline's thread does it
                return
        self._past_deadline.set()
        for ctx in self.running():
            self._release(ctx, "its handler was still running at the stop deadline")

    def _release(self, ctx: JobContext, why: str) -> None:
        """Give the attempt back: snooze it to run again at once (the
        attempt not counted), unless its handler returned first."""
        if not ctx._leave("released"):
            return
        ctx.stop("stopping")
        try:
            self.client.jobs.snooze(ctx.id, ctx.fence, 0)
            self.log.warning("job %d: %s; its attempt was given back (snoozed, to run again at once)", ctx.id, why)
            self._count("released")
        except (StaleError, NotFoundError) as e:
            self.log.warning("job %d: %s; giving its attempt back was refused: %s", ctx.id, why, e)
            self._count("stale")
        except FencedError as e:
            self.log.error("job %d: %s; giving its attempt back failed: %s; recovery takes it back once its "
                           "lease expires", ctx.id, why, e)
            self._count("errors")
        finally:
            with self._cond:
                if self._running.get(ctx.id) is ctx:
                    del self._running[ctx.id]
                self._cond.notify_all()

    def start(self, max_jobs: Optional[int] = None) -> threading.Thread:
        """Run the worker in a background thread (see :meth:`run`)."""
        t = threading.Thread(target=self.run, kwargs={"max_jobs": max_jobs}, name="fenced-worker", daemon=True)
        t.start()
        return t

    def run(self, max_jobs: Optional[int] = None) -> WorkerStats:
        """Claim and run jobs until :meth:`stop` or, with ``max_jobs``, until
        that many attempts were claimed and ended. A claim that fails while
        retrying can help (the server unreachable or restarting, a 5xx, a
        lost reply) is retried with back-off and logged; any other refusal
        (401, 403, 404, 400) is raised once the running attempts have ended.
        Returns the counts."""
        if not self._handlers:
            raise ValueError("no handlers: register at least one kind")
        if self._started:
            raise RuntimeError("a Worker runs once")
        self._started = True
        kinds = self.kinds
        hb_stop = threading.Event()
        hb = threading.Thread(target=self._heartbeats, args=(hb_stop,), name="fenced-heartbeat", daemon=True)
        hb.start()
        claimed = 0
        backoff = RETRY_FIRST
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
                    if not _may_repeat(e):
                        raise
                    self.log.warning("claim from %s failed, retrying in %.1fs: %s", self.queue, backoff, e)
                    self._stopping.wait(backoff)
                    backoff = min(2 * backoff, RETRY_MAX)
                    continue
                if backoff > RETRY_FIRST:
                    self.log.info("claim from %s works again", self.queue)
                backoff = RETRY_FIRST
                for job in jobs:
                    ctx = JobContext(self.client, job)
                    ctx._next_beat = time.monotonic() + self.heartbeat_every
                    with self._cond:
                        self._running[job.id] = ctx
                        self._stats.claimed += 1
                    claimed += 1
                    if self._stopping.is_set():
                        self._release(ctx, "it was claimed as the worker stopped")
                        continue
                    self._hb_wake.set()
                    threading.Thread(target=self._run_one, args=(ctx,), name="fenced-handler-%d" % job.id,
                                     daemon=True).start()
        finally:
            with self._cond:
                while self._running:
                    self._cond.wait(0.5)
            self._finished.set()
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
            discard = False
            timer: Optional[threading.Timer] = None
            if ctx.job.timeout_ms:
                timer = threading.Timer(ctx.job.timeout_ms / 1000.0, ctx._time_out)
                timer.daemon = True
                timer.start()
            try:
                if fn is None:  # the claim names the kinds: only a server that ignored them sends another
                    raise LookupError("no handler for kind %r (this worker runs %s)" % (ctx.kind, self.kinds))
                output = fn(ctx)
            except Exception as e:  # the handler's failure fails the attempt
                err = "".join(traceback.format_exception_only(type(e), e)).strip()
                if not isinstance(e, JobStopped):
                    self.log.info("job %d (%s) failed: %s", ctx.id, ctx.kind, err)
            finally:
                if timer is not None:
                    timer.cancel()
                with ctx._lock:
                    ctx._returned = True
                    timed_out = ctx.stop_reason == "timeout"
            if timed_out:  # whatever the handler returned
                output, err = None, "job timed out after %s" % _duration(ctx.job.timeout_ms or 0)
                self.log.info("job %d (%s): %s", ctx.id, ctx.kind, err)
            if err is None and ctx.stop_reason != "cancelled":
                why = _not_json(output)
                if why is not None:
                    err, discard = "the handler's return value is not JSON: %s" % why, True
                    self.log.error("job %d (%s): %s; failing the attempt for good", ctx.id, ctx.kind, err)
            if not ctx._leave("ending"):
                self.log.info("job %d: its handler returned after the attempt was given back; its outcome is "
                              "dropped", ctx.id)
                return
            self._end(ctx, output, err, discard)
        except Exception:  # never lose the slot to a bug in the worker itself
            self.log.exception("job %d: the worker failed", ctx.id)
            self._count("errors")
        finally:
            ctx.stopped.set()
            with self._cond:
                if self._running.get(ctx.id) is ctx:
                    del self._running[ctx.id]
                self._cond.notify_all()

    def _end(self, ctx: JobContext, output: Any, err: Optional[str], discard: bool = False) -> None:
        jobs = self.client.jobs
        cancelled = ctx.stop_reason == "cancelled"
        what = "completion" if err is None and not cancelled else "failure"
        try:
            if cancelled:
                self._write_end(ctx, what, lambda: jobs.fail(ctx.id, ctx.fence, err or "cancelled", discard=True))
                self._count("cancelled")
            elif err is None:
                try:
                    self._write_end(ctx, what, lambda: jobs.complete(ctx.id, ctx.fence, output))
                except (InvalidError, TooLargeError) as e:
                    # The same output would be refused again: the attempt
                    # fails for good, saying why.
                    refused = "the server refused the handler's return value: %s" % e
                    self.log.error("job %d (%s): %s; failing the attempt for good", ctx.id, ctx.kind, refused)
                    what = "failure"
                    self._write_end(ctx, what, lambda: jobs.fail(ctx.id, ctx.fence, refused, discard=True))
                    self._count("failed")
                    return
                self._count("completed")
            else:
                fail_err = err
                retry_in = _retry_in_ms(ctx.job)
                self._write_end(ctx, what, lambda: jobs.fail(ctx.id, ctx.fence, fail_err, retry_in_ms=retry_in,
                                                             discard=discard))
                self._count("failed")
        except StaleError as e:
            self.log.warning("job %d: %s refused as stale (%s): your fence %d, current fence %d, owner %r",
                             ctx.id, what, e.reason, e.your_fence, e.current_fence, e.current_owner)
            ctx.stop("stale")
            self._count("stale")
        except FencedError as e:
            self.log.error("job %d: %s failed: %s; the job is retried once its lease expires", ctx.id, what, e)
            self._count("errors")

    def _write_end(self, ctx: JobContext, what: str, send: Callable[[], JobWrite]) -> JobWrite:
        """Send an end, again with back-off while that may help (_may_repeat)
        and the attempt's lease could still hold, until stop's deadline."""
        give_up = time.monotonic() + self.lease_ms / 1000.0
        wait = RETRY_FIRST
        while True:
            try:
                w = send()
            except FencedError as e:
                if not _may_repeat(e) or self._past_deadline.is_set() or time.monotonic() + wait > give_up:
                    raise
                self.log.warning("job %d: writing its %s failed, retrying in %.1fs: %s", ctx.id, what, wait, e)
                self._past_deadline.wait(wait)
                wait = min(2 * wait, RETRY_MAX)
                continue
            if w.replayed:
                self.log.info("job %d: its %s was recorded already (the reply to the first was lost)", ctx.id, what)
            return w

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
