#!/usr/bin/env python3
"""A fenced worker in Python, on the fenced_client package.

Install the package once (standard library only, nothing downloaded):

    pip install ./clients/python

Run from a checkout without installing, this script finds the package in
../../clients/python itself.

As a process:

    python3 worker.py --url http://127.0.0.1:8080 --queue default --kind echo --max-jobs 10
    python3 worker.py --url http://127.0.0.1:8080 --demo-stale

The first works echo jobs (output = args) with fenced_client.Worker, which
claims only the kinds it has handlers for, heartbeats each attempt while its
handler runs and completes it with the handler's result (or fails it with
the exception's text); it prints the counts as one JSON line. The second
shows a completion after a takeover being refused with 409 stale_fence,
printing one JSON line, on a queue of its own that it leaves with nothing
queued or running. The token, if the server wants one, comes from
FENCED_TOKEN; the URL defaults to FENCED_URL. A server that refuses the
token (401, 403) ends the process with exit status 1 and a message saying
why; so does any other answer that retrying cannot change.
"""

import argparse
import json
import logging
import os
import secrets
import sys
import time

try:
    import fenced_client
except ImportError:  # run from a checkout: the package is two directories up
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
    import fenced_client

from fenced_client import Client, FencedError, ForbiddenError, StaleError, UnauthorizedError, Worker

DEMO_KIND = "stale-demo"


def _log(msg):
    print("worker: " + msg, file=sys.stderr, flush=True)


def demo_stale(client, queue=None, lease_ms=200, deadline_s=30.0):
    """A completion after a takeover is refused: w1 claims a job with a
    short lease and stalls; the server's maintenance takes the job back;
    w2 claims it (fence + 1) and completes it; w1's late completion raises
    StaleError. Returns what happened, as a dict.

    It runs on a queue of its own (default a new demo-stale-<random> queue,
    so jobs already queued elsewhere change nothing) and leaves nothing
    behind: its job ends succeeded, or, if the demo is cut short, cancelled
    -- never queued, and never held under w1's short lease."""
    queue = queue or "demo-stale-" + secrets.token_hex(6)
    job = client.jobs.enqueue(DEMO_KIND, {"n": 1}, queue=queue)
    held = {}  # the attempts claimed and not ended yet: owner -> job
    finished = False
    try:
        first = client.jobs.claim(queue, "w1", kinds=[DEMO_KIND], lease_ms=lease_ms, wait_ms=5000)
        if len(first) != 1 or first[0].id != job.id:
            raise RuntimeError("w1 did not claim the demo job: %r" % first)
        first = held["w1"] = first[0]
        # w1 stalls past its lease; w2 waits until recovery puts the job back.
        end = time.monotonic() + deadline_s
        second = None
        while second is None:
            left = end - time.monotonic()
            if left <= 0:
                raise RuntimeError("w2 never got the job back (is the server running maintenance?)")
            got = client.jobs.claim(queue, "w2", kinds=[DEMO_KIND], lease_ms=30000, wait_ms=int(min(left, 5.0) * 1000))
            second = next((j for j in got if j.id == job.id), None)
        held.pop("w1")
        held["w2"] = second
        out = {"queue": queue, "job_id": job.id, "first_fence": first.fence, "second_fence": second.fence}
        try:
            client.jobs.complete(first.id, first.fence, {"by": "w1"})
            out["stale"] = False
        except StaleError as e:
            out.update(stale=True, status=e.status, error=e.code, your_fence=e.your_fence,
                       current_fence=e.current_fence, current_owner=e.current_owner, reason=e.reason)
        client.jobs.complete(second.id, second.fence, {"by": "w2"})
        held.pop("w2")
        finished = True
        final = client.jobs.get(job.id).job
        out.update(final_state=final.state, final_output=final.output)
        return out
    finally:
        if not finished:
            _demo_cleanup(client, job.id, held)


def _demo_cleanup(client, job_id, held, deadline_s=10.0):
    """Ends the demo job cut short: cancelled at once if queued; if running,
    asked to cancel and its attempt still held failed under its own fence
    (which ends it cancelled), or, when that attempt's short lease already
    ran out, ended cancelled by the server's recovery. Waits until the job
    is finished; every failure here is only logged."""
    try:
        try:
            client.jobs.cancel(job_id)
        except FencedError as e:
            if e.code != "conflict":  # conflict: it finished meanwhile
                raise
        for a in held.values():
            try:
                client.jobs.fail(a.id, a.fence, "the stale-fence demo was cut short")
            except StaleError:
                pass  # its lease ran out: recovery ends it cancelled
        end = time.monotonic() + deadline_s
        while client.jobs.get(job_id).job.state in ("queued", "running"):
            if time.monotonic() > end:
                _log("demo job %d is not finished yet; the server's recovery will cancel it" % job_id)
                return
            time.sleep(0.1)
    except FencedError as e:
        _log("cleaning up demo job %d failed: %s" % (job_id, e))


def main(argv=None):
    p = argparse.ArgumentParser(description="A fenced worker over HTTP, on the fenced_client package.")
    p.add_argument("--url", default=None, help="server base URL (default $FENCED_URL or %s)" % fenced_client.DEFAULT_URL)
    p.add_argument("--queue", default=None, help="the queue worked (default: default)")
    p.add_argument("--kind", default="echo",
                   help="the kind of job worked, the only one claimed: echo (output = args)")
    p.add_argument("--owner", default=None)
    p.add_argument("--max-jobs", type=int, default=None, help="stop after this many jobs")
    p.add_argument("--lease-ms", type=int, default=30000)
    p.add_argument("--wait-ms", type=int, default=10000, help="long-poll of each claim")
    p.add_argument("--sleep-ms", type=int, default=0,
                   help="echo: work this long per job (longer than --lease-ms shows the heartbeats at work)")
    p.add_argument("--demo-stale", action="store_true",
                   help="show a completion after a takeover refused with 409 stale_fence, on a queue of its "
                        "own that it cleans up; prints one JSON line")
    a = p.parse_args(argv)
    if a.demo_stale and a.queue is not None:
        p.error("--demo-stale uses a queue of its own; drop --queue")
    if not a.demo_stale and a.kind != "echo":
        p.error("only the echo kind is built in; use fenced_client.Worker for others")
    logging.basicConfig(level=logging.WARNING, format="worker: %(message)s")
    client = Client(a.url)
    try:
        if a.demo_stale:
            out = demo_stale(client)
            print(json.dumps(out), flush=True)
            return 0 if out.get("stale") and out.get("current_fence") == out["first_fence"] + 1 else 1

        def echo(job):
            time.sleep(a.sleep_ms / 1000.0)
            return job.args

        worker = Worker(client, a.queue or "default", {a.kind: echo}, owner=a.owner, lease_ms=a.lease_ms,
                        wait_ms=a.wait_ms)
        stats = worker.run(max_jobs=a.max_jobs)
    except (UnauthorizedError, ForbiddenError) as e:
        _log("%s refused the request: %d %s: %s" % (client.url, e.status, e.code, e.message))
        if e.status == 401:
            _log("set FENCED_TOKEN to one of the server's tokens (its --tokens-file or FENCED_TOKENS)"
                 if client.token is None else "FENCED_TOKEN is not one of the server's tokens")
        return 1
    except FencedError as e:
        _log("%s refused the request: %s" % (client.url, e))
        return 1
    print(json.dumps({"completed": stats.completed, "failed": stats.failed, "stale": stats.stale}), flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
