"""Workflows: named tasks, each a job, that run once the tasks they depend
on have succeeded (docs/design.md §6.18).

A task is a dict of the HTTP service's task shape: ``name`` (distinct within
the workflow), ``kind``, and as a job ``args``, ``queue``, ``priority``,
``run_at`` (a datetime or an RFC 3339 string) or ``delay_ms``,
``max_attempts``, ``concurrency_key``, ``metadata``, ``tags``,
``timeout_ms`` and ``retry``; ``depends_on``, the names of the tasks it runs
after; and ``run_anyway``, to run once they finished even if some failed. A
task with dependencies is ``pending`` until they finish. The methods are on
``client.jobs``: :meth:`Jobs.enqueue_workflow`, :meth:`Jobs.get_workflow`,
:meth:`Jobs.list_workflows`, :meth:`Jobs.cancel_workflow`,
:meth:`Jobs.retry_workflow`, :meth:`Jobs.delete_workflow`,
:meth:`Jobs.task_dependencies` and :meth:`Jobs.add_workflow_tasks` (a
running task's fan-out, under its fence).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ._wire import db_time, format_time, parse_time

__all__ = ["Workflow", "WorkflowTask", "WorkflowPage", "TaskDependency"]


@dataclass
class WorkflowTask:
    """One task of a workflow: its name, its job's id, kind, queue and
    state, the names of the tasks it depends on (sorted), whether it runs
    anyway, and whether its workflow cancelled it (a dependency failed or
    was cancelled)."""

    name: str
    job_id: int
    kind: str = ""
    queue: str = ""
    state: str = ""
    depends_on: List[str] = field(default_factory=list)
    run_anyway: bool = False
    cancelled_by_workflow: bool = False

    @classmethod
    def from_json(cls, b: Mapping[str, Any]) -> "WorkflowTask":
        return cls(name=str(b["name"]), job_id=int(b["job_id"]), kind=str(b.get("kind", "")),
                   queue=str(b.get("queue", "")), state=str(b.get("state", "")),
                   depends_on=[str(d) for d in b.get("depends_on") or []],
                   run_anyway=bool(b.get("run_anyway", False)),
                   cancelled_by_workflow=bool(b.get("cancelled_by_workflow", False)))


@dataclass
class Workflow:
    """A workflow as read: ``state`` is derived from its tasks' (running,
    succeeded, failed or cancelled), ``counts`` its tasks by state (a state
    with none is absent). ``tasks`` is empty in a listing."""

    id: int
    name: str
    state: str = ""
    counts: Dict[str, int] = field(default_factory=dict)
    created_at: Optional[datetime] = None
    cancelled_at: Optional[datetime] = None
    tasks: List[WorkflowTask] = field(default_factory=list)
    db_time: Optional[datetime] = None

    @classmethod
    def from_json(cls, b: Mapping[str, Any]) -> "Workflow":
        return cls(id=int(b["id"]), name=str(b.get("name", "")), state=str(b.get("state", "")),
                   counts={str(k): int(v) for k, v in (b.get("counts") or {}).items()},
                   created_at=parse_time(b.get("created_at")), cancelled_at=parse_time(b.get("cancelled_at")),
                   tasks=[WorkflowTask.from_json(t) for t in b.get("tasks") or []], db_time=db_time(b))

    def task(self, name: str) -> WorkflowTask:
        """The task of that name; KeyError when there is none."""
        for t in self.tasks:
            if t.name == name:
                return t
        raise KeyError(name)


@dataclass
class WorkflowPage:
    """One page of workflows; ``next_after`` (or, newest first,
    ``next_before``) is the bound of the next page, None on the last."""

    workflows: List[Workflow]
    next_after: Optional[int] = None
    next_before: Optional[int] = None


@dataclass
class TaskDependency:
    """One dependency of a task: its name, job id and state, its output
    once it succeeded (decoded JSON), and its last error."""

    name: str
    job_id: int
    state: str = ""
    output: Any = None
    error: str = ""

    @classmethod
    def from_json(cls, b: Mapping[str, Any]) -> "TaskDependency":
        return cls(name=str(b["name"]), job_id=int(b["job_id"]), state=str(b.get("state", "")),
                   output=b.get("output"), error=str(b.get("error") or ""))


def tasks_body(tasks: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The tasks as the server takes them: dicts, a datetime run_at in RFC
    3339 and depends_on a list."""
    if isinstance(tasks, Mapping) or isinstance(tasks, (str, bytes)):
        raise TypeError("tasks must be a sequence of task dicts")
    out: List[Dict[str, Any]] = []
    for t in tasks:
        if not isinstance(t, Mapping):
            raise TypeError("each task must be a mapping such as {\"name\": \"a\", \"kind\": \"a\"}")
        d = dict(t)
        if isinstance(d.get("run_at"), datetime):
            d["run_at"] = format_time(d["run_at"])
        if d.get("depends_on") is not None:
            d["depends_on"] = list(d["depends_on"])
        if d.get("tags") is not None:
            d["tags"] = list(d["tags"])
        out.append(d)
    return out
