"""A client of ``fenced serve``: leases, semaphores, fenced resources, the
job queue (with its limits, pauses and workflows) and a worker. Standard library only.

    from fenced_client import Client, Worker

    client = Client("http://127.0.0.1:8080")          # or $FENCED_URL, $FENCED_TOKEN
    lease = client.leases.acquire("report", "w1", ttl_ms=10000)
    client.resources.put("report", "draft", fence=lease.fence)
"""

from .client import DEFAULT_URL, Client
from .errors import (
    ConflictError,
    FencedError,
    ForbiddenError,
    HeldError,
    InvalidError,
    JobStateError,
    UniqueConflictError,
    NotFoundError,
    StaleError,
    TooLargeError,
    UnauthorizedError,
    UnavailableError,
    UnknownOutcomeError,
    UnsupportedError,
)
from .jobs import Heartbeat, Job, JobAttempt, JobHistory, JobPage, Jobs, JobWrite
from .leases import Lease, Leases
from .resources import Resource, Resources, ResourceWrite
from .semaphores import Semaphore, Semaphores, Slot
from .workflows import TaskDependency, Workflow, WorkflowPage, WorkflowTask
from .worker import Handler, JobContext, JobStopped, Worker, WorkerStats

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_URL",
    "Client",
    "ConflictError",
    "FencedError",
    "ForbiddenError",
    "Handler",
    "Heartbeat",
    "HeldError",
    "InvalidError",
    "Job",
    "JobAttempt",
    "JobContext",
    "JobHistory",
    "JobPage",
    "JobStateError",
    "UniqueConflictError",
    "JobStopped",
    "JobWrite",
    "Jobs",
    "Lease",
    "Leases",
    "NotFoundError",
    "Resource",
    "ResourceWrite",
    "Resources",
    "Semaphore",
    "Semaphores",
    "Slot",
    "TaskDependency",
    "StaleError",
    "TooLargeError",
    "UnauthorizedError",
    "UnavailableError",
    "UnknownOutcomeError",
    "UnsupportedError",
    "Worker",
    "WorkerStats",
    "Workflow",
    "WorkflowPage",
    "WorkflowTask",
]
