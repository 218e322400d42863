"""Jobs: a fenced job queue.

A job is enqueued ``queued``; a claim makes it ``running`` under a lease of
``lease_ms`` with the attempt's fence. The worker heartbeats to extend the
lease, and ends the attempt with complete, fail or snooze -- each naming the
fence. Once the lease expires the server's maintenance takes the job back
(recovery) and another worker may claim it with the next fence; every write
of the old attempt then raises :class:`StaleError` and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence

from ._wire import db_time, format_time, parse_time, seg
from .workflows import TaskDependency, Workflow, WorkflowPage, tasks_body

if TYPE_CHECKING:
    from .client import Client

__all__ = ["Job", "JobAttempt", "JobHistory", "JobPage", "Heartbeat", "JobWrite", "Jobs", "DEFAULT_LEASE_MS"]

DEFAULT_LEASE_MS = 30000


@dataclass
class Job:
    """A job as the server holds it. ``args``, ``output`` and ``progress`` are
    decoded JSON. ``attempt`` counts the attempts started (the running one
    included); ``fence`` is the last attempt's, which a claim grants and
    every write of that attempt must carry. ``existing`` is set on an
    enqueue that matched an earlier job's idempotency key. ``metadata`` is
    the JSON object given with the job at enqueue (a producer's trace
    context under ``"traceparent"``), None when none was given.
    ``timeout_ms`` and ``retry`` (a dict of ``base_ms``, ``max_ms`` and
    ``jitter``) are the job's own attempt timeout and retry backoff given at
    enqueue, None when none was given. ``workflow_id`` and ``task_name``
    name the workflow and task the job is (0 and "" for a job of its own);
    a task waiting for its dependencies is ``pending``."""

    id: int
    kind: str
    args: Any = None
    queue: str = "default"
    priority: int = 0
    state: str = "queued"
    attempt: int = 0
    max_attempts: int = 0
    fence: int = 0
    owner: str = ""
    run_at: Optional[datetime] = None
    lease_expires_at: Optional[datetime] = None
    cancel_requested: bool = False
    output: Any = None
    error: str = ""
    progress: Any = None
    idempotency_key: str = ""
    concurrency_key: str = ""
    sequence_key: str = ""
    sequence_continue_on_failed: bool = False
    metadata: Optional[Dict[str, Any]] = None
    created_at: Optional[datetime] = None
    attempted_at: Optional[datetime] = None
    finished_at: Optional[datetime] = None
    tags: Optional[List[str]] = None
    workflow_id: int = 0
    task_name: str = ""
    existing: bool = False
    db_time: Optional[datetime] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    timeout_ms: Optional[int] = None
    retry: Optional[Dict[str, Any]] = None

    @classmethod
    def from_json(cls, b: Mapping[str, Any]) -> "Job":
        return cls(
            id=int(b["id"]),
            kind=str(b.get("kind", "")),
            args=b.get("args"),
            queue=str(b.get("queue", "")),
            priority=int(b.get("priority", 0)),
            state=str(b.get("state", "")),
            attempt=int(b.get("attempt", 0)),
            max_attempts=int(b.get("max_attempts", 0)),
            fence=int(b.get("fence", 0)),
            owner=str(b.get("owner", "")),
            run_at=parse_time(b.get("run_at")),
            lease_expires_at=parse_time(b.get("lease_expires_at")),
            cancel_requested=bool(b.get("cancel_requested", False)),
            output=b.get("output"),
            error=str(b.get("error") or ""),
            progress=b.get("progress"),
            idempotency_key=str(b.get("idempotency_key") or ""),
            concurrency_key=str(b.get("concurrency_key") or ""),
            sequence_key=str(b.get("sequence_key") or ""),
            sequence_continue_on_failed=bool(b.get("sequence_continue_on_failed", False)),
            metadata=b.get("metadata"),
            created_at=parse_time(b.get("created_at")),
            attempted_at=parse_time(b.get("attempted_at")),
            finished_at=parse_time(b.get("finished_at")),
            tags=list(b["tags"]) if b.get("tags") else None,
            workflow_id=int(b.get("workflow_id") or 0),
            task_name=str(b.get("task_name") or ""),
            existing=bool(b.get("existing", False)),
            db_time=db_time(b),
            raw=dict(b),
            timeout_ms=None if b.get("timeout_ms") is None else int(b["timeout_ms"]),
            retry=b.get("retry"),
        )


@dataclass
class JobAttempt:
    """One attempt of a job: its fence and owner, when it started and ended,
    its outcome and error."""

    attempt: int
    fence: int
    owner: str
    started_at: Optional[datetime]
    ended_at: Optional[datetime]
    outcome: str
    error: str

    @classmethod
    def from_json(cls, b: Mapping[str, Any]) -> "JobAttempt":
        return cls(attempt=int(b.get("attempt", 0)), fence=int(b.get("fence", 0)), owner=str(b.get("owner", "")),
                   started_at=parse_time(b.get("started_at")), ended_at=parse_time(b.get("ended_at")),
                   outcome=str(b.get("outcome") or ""), error=str(b.get("error") or ""))


@dataclass
class JobHistory:
    """A job and its attempts, oldest first."""

    job: Job
    attempts: List[JobAttempt]


@dataclass
class JobPage:
    """One page of a job list; ``next_after`` is the ``after`` of the next
    page, None on the last."""

    jobs: List[Job]
    next_after: Optional[int]


@dataclass
class Heartbeat:
    """A heartbeat's answer: the attempt's new lease expiry and whether the
    job was asked to cancel (the handler should stop; its final fail ends
    the job cancelled)."""

    id: int
    fence: int
    lease_expires_at: Optional[datetime]
    cancel_requested: bool
    db_time: Optional[datetime] = None


@dataclass
class JobWrite:
    """The answer of a complete, fail, snooze or progress: the attempt it
    applied to and the database time it was decided at. ``replayed`` is
    set when the attempt had already ended this same way (a repeat of an
    end whose reply was lost): nothing was written, and ``db_time`` is the
    first end's."""

    id: int
    fence: int
    db_time: Optional[datetime] = None
    replayed: bool = False


def _write(b: Mapping[str, Any]) -> JobWrite:
    return JobWrite(id=int(b.get("id", 0)), fence=int(b.get("fence", 0)), db_time=db_time(b),
                    replayed=bool(b.get("replayed", False)))


class Jobs:
    """The job API of a :class:`Client` (``client.jobs``)."""

    def __init__(self, client: "Client") -> None:
        self._c = client

    def enqueue(
        self,
        kind: str,
        args: Any = None,
        *,
        queue: Optional[str] = None,
        priority: Optional[int] = None,
        run_at: Optional[datetime] = None,
        delay_ms: Optional[int] = None,
        max_attempts: Optional[int] = None,
        idempotency_key: Optional[str] = None,
        concurrency_key: Optional[str] = None,
        sequence_key: Optional[str] = None,
        sequence_continue_on_failed: bool = False,
        metadata: Optional[Mapping[str, Any]] = None,
        timeout_ms: Optional[int] = None,
        retry: Optional[Mapping[str, Any]] = None,
        unique: Optional[Mapping[str, Any]] = None,
        tags: Optional[Sequence[str]] = None,
    ) -> Job:
        """Enqueue a job of ``kind`` with ``args`` (any JSON value; None is
        ``{}``) in ``queue`` (default ``"default"``). ``priority`` 0 runs
        first; ``run_at`` or ``delay_ms`` (not both) hold it back;
        ``max_attempts`` defaults to the server's. With ``idempotency_key``
        an enqueue that matches an earlier job returns that job with
        ``existing`` set. ``concurrency_key`` and ``sequence_key`` are the
        server's per-key limits and ordering (docs/design.md §6.10).
        ``metadata`` is a JSON object stored with the job and returned with
        it to every worker, in any language: pass the caller's trace context
        as ``{"traceparent": ..., "tracestate": ...}`` (W3C Trace Context) to
        continue its trace in the worker. ``timeout_ms`` bounds each attempt
        (a worker ends it then, and the attempt fails and is retried);
        ``retry`` is the job's own retry backoff, a dict of ``base_ms``,
        ``max_ms`` and ``jitter`` (0 to 1; 0 is none), each optional. Both
        come before a worker's own.

        ``unique`` makes the job unique: while a job of the same kind (and,
        as chosen, args, args keys, queue and window of its run time) is in
        one of its unique states, the enqueue returns that job with
        ``existing`` set. Its keys: ``by_args`` (bool), ``args_keys`` (a list
        of top-level keys of the args), ``by_period_ms`` (the window, whole
        seconds in ms), ``by_queue`` (bool), ``by_state`` (a list of states
        that must include ``"queued"`` and ``"running"``; default queued,
        running, succeeded); ``{}`` is unique by kind alone."""
        body: Dict[str, Any] = {"kind": kind, "args": {} if args is None else args}
        if timeout_ms is not None:
            body["timeout_ms"] = timeout_ms
        if retry is not None:
            body["retry"] = dict(retry)
        if unique is not None:
            if not isinstance(unique, Mapping):
                raise TypeError("unique must be a mapping such as {\"by_args\": True}")
            u = dict(unique)
            for k in ("args_keys", "by_state"):
                if k in u and u[k] is not None:
                    u[k] = list(u[k])
            body["unique"] = u
        if run_at is not None:
            body["run_at"] = format_time(run_at)
        for k, v in (("queue", queue), ("priority", priority), ("delay_ms", delay_ms),
                     ("max_attempts", max_attempts), ("idempotency_key", idempotency_key),
                     ("concurrency_key", concurrency_key), ("sequence_key", sequence_key)):
            if v is not None:
                body[k] = v
        if sequence_continue_on_failed:
            body["sequence_continue_on_failed"] = True
        if metadata is not None:
            body["metadata"] = dict(metadata)
        if tags:
            body["tags"] = list(tags)
        return Job.from_json(self._c.request("POST", "/v1/jobs", body))

    def get(self, job_id: int) -> JobHistory:
        """The job and its attempts; :class:`NotFoundError` when there is no
        such job."""
        b = self._c.request("GET", "/v1/jobs/%d" % job_id)
        job = Job.from_json(dict(b["job"], db_time=b.get("db_time")))
        return JobHistory(job=job, attempts=[JobAttempt.from_json(a) for a in b.get("attempts") or []])

    def list(self, *, state: Optional[str] = None, queue: Optional[str] = None, kind: Optional[str] = None,
             limit: Optional[int] = None, after: Optional[int] = None,
             tags: Optional[Sequence[str]] = None, all_tags: bool = False) -> JobPage:
        """One page of jobs by id, filtered by state, queue, kind and tags
        (jobs carrying any of ``tags``, or all of them with ``all_tags``);
        pass the page's ``next_after`` as ``after`` for the next one."""
        b = self._c.request("GET", "/v1/jobs", query={"state": state, "queue": queue, "kind": kind,
                                                       "limit": limit, "after": after,
                                                       "tag": list(tags) if tags else None,
                                                       "tag_match": "all" if all_tags else None})
        nxt = b.get("next_after")
        return JobPage(jobs=[Job.from_json(j) for j in b.get("jobs") or []], next_after=None if nxt is None else int(nxt))

    def iter(self, *, state: Optional[str] = None, queue: Optional[str] = None,
             kind: Optional[str] = None) -> Iterator[Job]:
        """Every job matching the filters, page after page."""
        after: Optional[int] = None
        while True:
            page = self.list(state=state, queue=queue, kind=kind, after=after)
            yield from page.jobs
            if page.next_after is None:
                return
            after = page.next_after

    def claim(self, queue: str, owner: str, *, kinds: Optional[Iterable[str]] = None, limit: int = 1,
              lease_ms: int = DEFAULT_LEASE_MS, wait_ms: int = 0) -> List[Job]:
        """Claim up to ``limit`` runnable jobs of ``queue`` for ``owner``, each
        running under a lease of ``lease_ms`` with its new fence. With
        ``kinds``, only jobs of those kinds are claimed (a job of another kind
        stays queued for a worker that runs it); without, every kind. When
        none is runnable the server waits up to ``wait_ms`` (it caps the wait,
        at 30 s by default) for one; an empty list means none came."""
        body: Dict[str, Any] = {"owner": owner, "limit": limit, "lease_ms": lease_ms, "wait_ms": wait_ms}
        if kinds is not None:
            ks: Sequence[str] = sorted(set(kinds))
            if ks:
                body["kinds"] = list(ks)
        b = self._c.request("POST", "/v1/queues/%s/claim" % seg(queue), body,
                            timeout=self._c.timeout + wait_ms / 1000.0)
        t = b.get("db_time")
        return [Job.from_json(dict(j, db_time=t)) for j in b.get("jobs") or []]

    def heartbeat(self, job_id: int, fence: int, lease_ms: int = DEFAULT_LEASE_MS) -> Heartbeat:
        """Extend the attempt's lease to ``lease_ms`` from the database's now.
        Raises :class:`StaleError` when the attempt is no longer current (its
        lease expired and recovery took the job back, or it ended)."""
        b = self._c.request("POST", "/v1/jobs/%d/heartbeat" % job_id, {"fence": fence, "lease_ms": lease_ms})
        return Heartbeat(id=int(b.get("id", job_id)), fence=int(b.get("fence", fence)),
                         lease_expires_at=parse_time(b.get("lease_expires_at")),
                         cancel_requested=bool(b.get("cancel_requested", False)), db_time=db_time(b))

    def progress(self, job_id: int, fence: int, stage: Optional[str] = None,
                 counters: Optional[Mapping[str, int]] = None) -> JobWrite:
        """Record the attempt's progress (a stage name, integer counters); the
        job shows the last report while it runs. :class:`StaleError` when the
        attempt is no longer current."""
        body: Dict[str, Any] = {"fence": fence}
        if stage is not None:
            body["stage"] = stage
        if counters is not None:
            body["counters"] = dict(counters)
        return _write(self._c.request("POST", "/v1/jobs/%d/progress" % job_id, body))

    def merge_metadata(self, job_id: int, fence: int, patch: Mapping[str, Any]) -> Dict[str, Any]:
        """Merge ``patch`` into the job's metadata as a JSON Merge Patch (RFC
        7396: None removes a key, a dict merges into a dict) and return the
        merged metadata. A fenced write: :class:`StaleError` when the attempt
        is no longer current, and nothing is merged."""
        b = self._c.request("POST", "/v1/jobs/%d/metadata" % job_id, {"fence": fence, "patch": dict(patch)})
        return dict(b.get("metadata") or {})

    def complete(self, job_id: int, fence: int, output: Any = None) -> JobWrite:
        """End the attempt as succeeded with ``output`` (any JSON value; None
        stores none). Raises :class:`StaleError` when the attempt is no
        longer current -- the job is someone else's now: never treat that as
        success. A repeat with the same output (after an
        :class:`UnknownOutcomeError`, say) is answered as the first
        completion was, ``replayed``: an end is safe to send again."""
        return _write(self._c.request("POST", "/v1/jobs/%d/complete" % job_id, {"fence": fence, "output": output}))

    def fail(self, job_id: int, fence: int, error: str, *, retry_in_ms: Optional[int] = None,
             discard: bool = False) -> JobWrite:
        """End the attempt as failed with ``error``: the job is queued again
        after ``retry_in_ms`` (default: the server's backoff) unless it is out
        of attempts, ``discard`` is set, or it was asked to cancel (then it
        ends cancelled). :class:`StaleError` when no longer current; a
        repeat with the same error is answered ``replayed``."""
        body: Dict[str, Any] = {"fence": fence, "error": error}
        if retry_in_ms is not None:
            body["retry_in_ms"] = retry_in_ms
        if discard:
            body["discard"] = True
        return _write(self._c.request("POST", "/v1/jobs/%d/fail" % job_id, body))

    def snooze(self, job_id: int, fence: int, delay_ms: int) -> JobWrite:
        """End the attempt without a failure; the job runs again after
        ``delay_ms``. :class:`StaleError` when no longer current; a repeat
        is answered ``replayed``."""
        return _write(self._c.request("POST", "/v1/jobs/%d/snooze" % job_id, {"fence": fence, "delay_ms": delay_ms}))

    def cancel(self, job_id: int) -> Job:
        """Cancel a queued job at once, or ask a running one to stop (its
        worker learns it at its next heartbeat). :class:`JobStateError` when
        the job already finished."""
        return Job.from_json(self._c.request("POST", "/v1/jobs/%d/cancel" % job_id, {}))

    def retry(self, job_id: int) -> Job:
        """Queue a failed (dead-lettered) or cancelled job again, to run now
        with ``max_attempts`` more attempts. :class:`JobStateError` in any
        other state; :class:`UniqueConflictError` when the job is unique and
        a job enqueued since holds its slot."""
        return Job.from_json(self._c.request("POST", "/v1/jobs/%d/retry" % job_id, {}))

    def set_limit(self, queue: str, per_key: int = 0, global_: int = 0, kind: str = "", key: str = "") -> Dict[str, Any]:
        """Declare the limit of ``queue`` (of its jobs of ``kind``, or of its
        concurrency ``key``, when given), replacing the one it had:
        ``per_key`` running attempts of one concurrency key at most,
        ``global_`` running jobs at most; 0 is no limit. Returns the limit
        as the server stored it."""
        path = "/v1/queues/%s" % seg(queue)
        if kind and key:
            raise ValueError("a limit is of a kind or of a key, not both")
        if key and global_:
            raise ValueError("a key's limit is per key only: it has no global part")
        if kind:
            path += "/kinds/%s" % seg(kind)
        elif key:
            path += "/keys/%s" % seg(key)
        body: Dict[str, Any] = {"per_key": per_key}
        if not key:  # a key's limit has no global part
            body["global"] = global_
        return self._c.request("PUT", path + "/limit", body)

    def delete_limit(self, queue: str, kind: str = "", key: str = "") -> None:
        """Delete the limit of ``queue`` (or of its ``kind`` or ``key``).
        :class:`NotFoundError` when none is declared."""
        path = "/v1/queues/%s" % seg(queue)
        if kind:
            path += "/kinds/%s" % seg(kind)
        elif key:
            path += "/keys/%s" % seg(key)
        self._c.request("DELETE", path + "/limit")

    def limits(self, queue: str = "") -> List[Dict[str, Any]]:
        """The declared limits, of ``queue`` or of every queue: each
        ``{queue, kind, concurrency_key, per_key, global}``."""
        path = "/v1/queues/%s/limits" % seg(queue) if queue else "/v1/limits"
        return list(self._c.request("GET", path).get("limits") or [])

    def pause(self, queue: str) -> bool:
        """Pause ``queue``: no job of it is claimed until it is resumed
        (running ones run on). Returns whether this call changed it."""
        return bool(self._c.request("POST", "/v1/queues/%s/pause" % seg(queue), {}).get("changed"))

    def resume(self, queue: str) -> bool:
        """Resume ``queue``. Returns whether this call changed it."""
        return bool(self._c.request("POST", "/v1/queues/%s/resume" % seg(queue), {}).get("changed"))

    def pauses(self) -> List[str]:
        """The paused queues."""
        return [str(p.get("queue")) for p in self._c.request("GET", "/v1/pauses").get("pauses") or []]

    def delete(self, job_id: int) -> None:
        """Delete a job, in any state, with its attempt history. A running
        attempt's worker is not told: its next heartbeat, progress or end
        gets :class:`NotFoundError`. :class:`NotFoundError` when there is no
        such job."""
        self._c.request("DELETE", "/v1/jobs/%d" % job_id)

    # Workflows (fenced_client.workflows).

    def enqueue_workflow(self, name: str, tasks: Sequence[Mapping[str, Any]]) -> Workflow:
        """Enqueue a workflow of ``tasks`` (dicts: see
        :mod:`fenced_client.workflows`) in one transaction and return it with
        its tasks. The tasks' names are distinct, their ``depends_on`` name
        tasks of the workflow and form no cycle; anything invalid raises
        :class:`InvalidError` and nothing is written. A task with
        dependencies is pending until they finish."""
        return Workflow.from_json(self._c.request("POST", "/v1/workflows", {"name": name, "tasks": tasks_body(tasks)}))

    def get_workflow(self, workflow_id: int) -> Workflow:
        """The workflow with its tasks; :class:`NotFoundError` when there is
        none."""
        return Workflow.from_json(self._c.request("GET", "/v1/workflows/%d" % workflow_id))

    def list_workflows(self, *, name: Optional[str] = None, limit: Optional[int] = None,
                       after: Optional[int] = None, before: Optional[int] = None,
                       desc: bool = False) -> WorkflowPage:
        """One page of workflows by id (newest first with ``desc``), of
        ``name`` when given, with their counts but not their tasks; pass the
        page's ``next_after`` as ``after`` (or ``next_before`` as ``before``
        with ``desc``) for the next one."""
        b = self._c.request("GET", "/v1/workflows", query={"name": name, "limit": limit, "after": after,
                                                            "before": before, "order": "desc" if desc else None})
        na, nb = b.get("next_after"), b.get("next_before")
        return WorkflowPage(workflows=[Workflow.from_json(w) for w in b.get("workflows") or []],
                            next_after=None if na is None else int(na), next_before=None if nb is None else int(nb))

    def cancel_workflow(self, workflow_id: int) -> Workflow:
        """Cancel a workflow: its pending and queued tasks at once, its
        running ones asked to stop. :class:`NotFoundError` when there is
        none."""
        return Workflow.from_json(self._c.request("POST", "/v1/workflows/%d/cancel" % workflow_id, {}))

    def retry_workflow(self, workflow_id: int) -> Workflow:
        """Resume a workflow: its failed tasks, and the cancelled ones its
        workflow did not cancel, are queued again, and their dependents wait
        for them again. :class:`NotFoundError` when there is none."""
        return Workflow.from_json(self._c.request("POST", "/v1/workflows/%d/retry" % workflow_id, {}))

    def delete_workflow(self, workflow_id: int) -> None:
        """Delete a workflow whole: every task, in any state, with its
        history. :class:`NotFoundError` when there is none."""
        self._c.request("DELETE", "/v1/workflows/%d" % workflow_id)

    def task_dependencies(self, job_id: int) -> List[TaskDependency]:
        """The dependencies of the task ``job_id``, by name: each one's
        state, and its output once it succeeded (a task's handler reads its
        inputs so). [] for a job that is no task or has none;
        :class:`NotFoundError` when there is no such job."""
        b = self._c.request("GET", "/v1/jobs/%d/dependencies" % job_id)
        return [TaskDependency.from_json(d) for d in b.get("dependencies") or []]

    def add_workflow_tasks(self, job_id: int, fence: int, tasks: Sequence[Mapping[str, Any]]) -> Workflow:
        """Add ``tasks`` to the workflow of the running task ``job_id``, under
        its attempt's ``fence`` (fan-out), and return the workflow. The new
        tasks may depend on each other and on any task of the workflow. A
        fenced write: :class:`StaleError` when the attempt is no longer
        current, and nothing is added."""
        return Workflow.from_json(self._c.request("POST", "/v1/jobs/%d/tasks" % job_id,
                                                  {"fence": fence, "tasks": tasks_body(tasks)}))
