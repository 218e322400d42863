#!/usr/bin/env python3
"""A fenced worker in Python, standard library only.

FencedClient speaks the HTTP/JSON API of `fenced serve` (see the README's
"HTTP service" section); run_worker claims jobs of the kinds it has
handlers for -- the claim names them, so a job of another kind is never
taken -- heartbeats them from a background thread while the handler runs,
and completes them with the handler's result (or fails them with the
exception's text).

Every write names the fence its claim granted. Once the attempt is no longer
current -- its lease expired, recovery took the job back and another worker
claimed it -- the server answers 409 stale_fence and changes nothing; the
client raises StaleFence, carrying your_fence and current_fence.

As a process:

    python3 worker.py --url http://127.0.0.1:8080 --queue default --kind echo --max-jobs 10
    python3 worker.py --url http://127.0.0.1:8080 --demo-stale

The first works echo jobs (output = args) and leaves every other kind
queued; the second shows a completion after a takeover being refused,
printing one JSON line, on a queue of its own that it leaves with nothing
queued or running. The token, if the server wants one, comes from
FENCED_TOKEN; the URL defaults to FENCED_URL. A server that refuses the
token (401, 403) ends the process with exit status 1 and a message saying
why; so does any other answer that retrying cannot change.
"""

import argparse
import json
import os
import secrets
import socket
import sys
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["FencedClient", "FencedError", "StaleFence", "Unauthorized", "Attempt", "retryable", "run_worker"]

DEFAULT_URL = "http://127.0.0.1:8080"


class FencedError(Exception):
    """An error answer of the server: status, code ("invalid", "not_found",
    "conflict", ...), message, and the whole JSON body."""

    def __init__(self, status, code, message, body=None):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body or {}


class StaleFence(FencedError):
    """409 stale_fence: the fence is no longer current; nothing changed."""

    def __init__(self, status, code, message, body=None):
        super().__init__(status, code, message, body)
        b = self.body
        self.kind = b.get("kind")  # lease, job or resource
        self.name = b.get("name")  # lease name, job id or resource key
        self.your_fence = b.get("your_fence")
        self.current_fence = b.get("current_fence")
        self.current_owner = b.get("current_owner")
        self.reason = b.get("reason")


class Unauthorized(FencedError):
    """401 unauthorized or 403 forbidden: the server refused the request's
    token, or its lack of one. Retrying cannot help."""


def retryable(err):
    """Whether a request that failed with err may succeed if sent again: a
    connection error, a 5xx (503: the database is unreachable), 408 or 429.
    Any other answer (401, 403, 400 invalid, 404) would come back the same."""
    if not isinstance(err, FencedError):
        return isinstance(err, OSError)
    return err.status >= 500 or err.status in (408, 429)


class FencedClient:
    """A client of `fenced serve`. base_url defaults to $FENCED_URL (else
    http://127.0.0.1:8080), token to $FENCED_TOKEN (none when unset)."""

    def __init__(self, base_url=None, token=None, timeout=30.0):
        self.base_url = (base_url or os.environ.get("FENCED_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else os.environ.get("FENCED_TOKEN") or None
        self.timeout = timeout

    def request(self, method, path, body=None, timeout=None):
        """Send one request; return the decoded JSON answer or raise
        FencedError (StaleFence for 409 stale_fence)."""
        data = None
        headers = {"Accept": "application/json"}
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(self.base_url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as res:
                raw = res.read()
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                b = json.loads(raw)
            except ValueError:
                b = {}
            if not isinstance(b, dict):
                b = {}
            code = b.get("error", "http_%d" % e.code)
            message = b.get("message", raw.decode("utf-8", "replace")[:200])
            if code == "stale_fence":
                cls = StaleFence
            elif e.code in (401, 403):
                cls = Unauthorized
            else:
                cls = FencedError
            raise cls(e.code, code, message, b) from None
        return json.loads(raw) if raw else {}

    # Jobs.

    def enqueue(self, kind, args=None, queue=None, priority=None, run_at=None, delay_ms=None,
                max_attempts=None, idempotency_key=None):
        """POST /v1/jobs: the new job (or the existing one its idempotency
        key matched: "existing" is true then)."""
        body = {"kind": kind, "args": {} if args is None else args}
        for k, v in (("queue", queue), ("priority", priority), ("run_at", run_at), ("delay_ms", delay_ms),
                     ("max_attempts", max_attempts), ("idempotency_key", idempotency_key)):
            if v is not None:
                body[k] = v
        return self.request("POST", "/v1/jobs", body)

    def claim(self, queue, owner, limit=1, lease_ms=30000, wait_ms=0, kinds=None):
        """POST /v1/queues/{queue}/claim, waiting up to wait_ms (the server
        caps it) for a job: the list of claimed jobs, each with its fence.
        With kinds (a list of kind names), only jobs of those kinds are
        claimed; without, jobs of every kind."""
        body = {"owner": owner, "limit": limit, "lease_ms": lease_ms, "wait_ms": wait_ms}
        if kinds:
            body["kinds"] = list(kinds)
        res = self.request("POST", "/v1/queues/%s/claim" % _seg(queue), body,
                           timeout=self.timeout + wait_ms / 1000.0)
        return res.get("jobs") or []

    def heartbeat(self, job_id, fence, lease_ms=30000):
        """Extend the attempt's lease: {lease_expires_at, cancel_requested}."""
        return self.request("POST", "/v1/jobs/%d/heartbeat" % job_id, {"fence": fence, "lease_ms": lease_ms})

    def complete(self, job_id, fence, output=None):
        """The attempt succeeded; output is any JSON value."""
        return self.request("POST", "/v1/jobs/%d/complete" % job_id, {"fence": fence, "output": output})

    def fail(self, job_id, fence, error, retry_in_ms=None, discard=False):
        """The attempt failed: retried after retry_in_ms (default: the
        server's backoff) unless out of attempts or discard."""
        body = {"fence": fence, "error": error}
        if retry_in_ms is not None:
            body["retry_in_ms"] = retry_in_ms
        if discard:
            body["discard"] = True
        return self.request("POST", "/v1/jobs/%d/fail" % job_id, body)

    def cancel(self, job_id):
        """POST /v1/jobs/{id}/cancel: a queued job is cancelled at once; a
        running one is asked to stop (its next fail ends it cancelled, and
        so does recovery once its lease expires)."""
        return self.request("POST", "/v1/jobs/%d/cancel" % job_id, {})

    def get_job(self, job_id):
        """GET /v1/jobs/{id}: {"job": ..., "attempts": [...]}."""
        return self.request("GET", "/v1/jobs/%d" % job_id)


def _seg(s):
    return urllib.parse.quote(s, safe="")


class Attempt:
    """One claimed attempt, as the handler sees it: the job's id, fence,
    kind and args, the raw job, and two events the heartbeat thread sets --
    cancel_requested (stop soon: the job is being cancelled) and lost (the
    attempt is stale; whatever the handler writes will be refused)."""

    def __init__(self, job):
        self.job = job
        self.id = job["id"]
        self.fence = job["fence"]
        self.kind = job["kind"]
        self.args = job.get("args")
        self.cancel_requested = threading.Event()
        self.lost = threading.Event()


def _log(msg):
    print("worker: " + msg, file=sys.stderr, flush=True)


def _heartbeat_loop(client, attempt, lease_ms, interval, stop):
    while not stop.wait(interval):
        try:
            res = client.heartbeat(attempt.id, attempt.fence, lease_ms)
            if res.get("cancel_requested"):
                attempt.cancel_requested.set()
        except StaleFence as e:
            _log("job %d: heartbeat refused, attempt lost (fence %s, current %s)"
                 % (attempt.id, e.your_fence, e.current_fence))
            attempt.lost.set()
            return
        except (FencedError, OSError) as e:
            _log("job %d: heartbeat failed, will retry: %s" % (attempt.id, e))


def _handlers(kind, handler):
    """The kind -> handler map of run_worker's arguments."""
    if isinstance(kind, dict):
        if handler is not None:
            raise TypeError("run_worker: give a dict of kinds to handlers, or one kind and its handler")
        handlers = dict(kind)
    else:
        handlers = {kind: handler}
    if not handlers or any(not isinstance(k, str) or not k or h is None for k, h in handlers.items()):
        raise ValueError("run_worker: every kind needs a name and a handler (it claims only those kinds)")
    return handlers


def run_worker(kind, handler=None, queue="default", owner=None, client=None, lease_ms=30000, wait_ms=10000,
               heartbeat_every=None, max_jobs=None, stop=None):
    """Claim jobs from queue and run their handler(attempt): kind and handler
    name one kind, or kind is a dict of kinds to handlers. Only jobs of those
    kinds are claimed (the claim names them); other kinds stay queued for a
    worker that runs them. Each attempt is heartbeated every heartbeat_every
    seconds (default a third of the lease) from a background thread. The
    handler's return value (any JSON) completes the job; an exception fails
    it with its text (retried with the server's backoff).

    A completion or failure refused as stale (the lease expired and another
    worker took the job over) is logged and the loop goes on: that job is
    someone else's now. A claim that fails is retried every second while
    retrying can help (the server unreachable or answering 5xx); any other
    refusal -- 401 or 403 (raised as Unauthorized: the token is missing or
    wrong), 400, 404 -- is raised. Stops after max_jobs attempts finished
    (completed, failed or found stale), or when the stop event is set.
    Returns a dict of counts: completed, failed, stale."""
    handlers = _handlers(kind, handler)
    kinds = sorted(handlers)
    client = client or FencedClient()
    owner = owner or "py-%s-%d" % (socket.gethostname(), os.getpid())
    stop = stop or threading.Event()
    interval = heartbeat_every if heartbeat_every is not None else max(lease_ms / 3000.0, 0.001)
    counts = {"completed": 0, "failed": 0, "stale": 0}
    done = 0
    while not stop.is_set() and (max_jobs is None or done < max_jobs):
        try:
            jobs = client.claim(queue, owner, limit=1, lease_ms=lease_ms, wait_ms=wait_ms, kinds=kinds)
        except (FencedError, OSError) as e:
            if not retryable(e):
                raise
            _log("claim failed, retrying in 1s: %s" % e)
            stop.wait(1.0)
            continue
        for job in jobs:
            attempt = Attempt(job)
            hb_stop = threading.Event()
            hb = threading.Thread(target=_heartbeat_loop, daemon=True,
                                  args=(client, attempt, lease_ms, interval, hb_stop))
            hb.start()
            try:
                run = handlers.get(attempt.kind)
                if run is None:  # the claim names the kinds: only a server that ignored them sends another
                    raise LookupError("no handler for kind %r in this worker (it runs %s)" % (attempt.kind, kinds))
                output, err = run(attempt), None
            except Exception as e:  # the handler's failure fails the attempt
                output, err = None, "".join(traceback.format_exception_only(type(e), e)).strip()
            finally:
                hb_stop.set()
                hb.join()
            try:
                if err is None:
                    client.complete(attempt.id, attempt.fence, output)
                    counts["completed"] += 1
                else:
                    client.fail(attempt.id, attempt.fence, err)
                    counts["failed"] += 1
            except StaleFence as e:
                _log("job %d: %s refused as stale: your fence %s, current fence %s"
                     % (attempt.id, "completion" if err is None else "failure", e.your_fence, e.current_fence))
                counts["stale"] += 1
            done += 1
    return counts


DEMO_KIND = "stale-demo"


def demo_stale(client, queue=None, lease_ms=200, deadline_s=30.0):
    """A completion after a takeover is refused: w1 claims a job with a
    short lease and stalls; the server's maintenance takes the job back;
    w2 claims it (fence + 1) and completes it; w1's late completion raises
    StaleFence. Returns what happened, as a dict.

    It runs on a queue of its own (default a new demo-stale-<random> queue,
    so jobs already queued elsewhere change nothing) and leaves nothing
    behind: its job ends succeeded, or, if the demo is cut short, cancelled
    -- never queued, and never held under w1's short lease."""
    queue = queue or "demo-stale-" + secrets.token_hex(6)
    job = client.enqueue(DEMO_KIND, {"n": 1}, queue=queue)
    held = {}  # the attempts claimed and not ended yet: owner -> job
    finished = False
    try:
        first = client.claim(queue, "w1", lease_ms=lease_ms, wait_ms=5000, kinds=[DEMO_KIND])
        if len(first) != 1 or first[0]["id"] != job["id"]:
            raise RuntimeError("w1 did not claim the demo job: %r" % first)
        first = held["w1"] = first[0]
        # w1 stalls past its lease; w2 waits until recovery puts the job back.
        end = time.monotonic() + deadline_s
        second = None
        while second is None:
            left = end - time.monotonic()
            if left <= 0:
                raise RuntimeError("w2 never got the job back (is the server running maintenance?)")
            got = client.claim(queue, "w2", lease_ms=30000, wait_ms=int(min(left, 5.0) * 1000), kinds=[DEMO_KIND])
            second = next((j for j in got if j["id"] == job["id"]), None)
        held.pop("w1")
        held["w2"] = second
        out = {"queue": queue, "job_id": job["id"], "first_fence": first["fence"], "second_fence": second["fence"]}
        try:
            client.complete(first["id"], first["fence"], {"by": "w1"})
            out["stale"] = False
        except StaleFence as e:
            out.update(stale=True, status=e.status, error=e.code, your_fence=e.your_fence,
                       current_fence=e.current_fence, current_owner=e.current_owner, reason=e.reason)
        client.complete(second["id"], second["fence"], {"by": "w2"})
        held.pop("w2")
        finished = True
        final = client.get_job(job["id"])["job"]
        out.update(final_state=final["state"], final_output=final.get("output"))
        return out
    finally:
        if not finished:
            _demo_cleanup(client, job["id"], held)


def _demo_cleanup(client, job_id, held, deadline_s=10.0):
    """Ends the demo job cut short: cancelled at once if queued; if running,
    asked to cancel and its attempt still held failed under its own fence
    (which ends it cancelled), or, when that attempt's short lease already
    ran out, ended cancelled by the server's recovery. Waits until the job
    is finished; every failure here is only logged."""
    try:
        try:
            client.cancel(job_id)
        except FencedError as e:
            if e.code != "conflict":  # conflict: it finished meanwhile
                raise
        for a in held.values():
            try:
                client.fail(a["id"], a["fence"], "the stale-fence demo was cut short")
            except StaleFence:
                pass  # its lease ran out: recovery ends it cancelled
        end = time.monotonic() + deadline_s
        while client.get_job(job_id)["job"]["state"] in ("queued", "running"):
            if time.monotonic() > end:
                _log("demo job %d is not finished yet; the server's recovery will cancel it" % job_id)
                return
            time.sleep(0.1)
    except (FencedError, OSError) as e:
        _log("cleaning up demo job %d failed: %s" % (job_id, e))


def main(argv=None):
    p = argparse.ArgumentParser(description="A fenced worker over HTTP (standard library only).")
    p.add_argument("--url", default=None, help="server base URL (default $FENCED_URL or %s)" % DEFAULT_URL)
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
        p.error("only the echo kind is built in; import run_worker for others")
    client = FencedClient(a.url)
    try:
        if a.demo_stale:
            out = demo_stale(client)
            print(json.dumps(out), flush=True)
            return 0 if out.get("stale") and out.get("current_fence") == out["first_fence"] + 1 else 1

        def echo(attempt):
            time.sleep(a.sleep_ms / 1000.0)
            return attempt.args

        counts = run_worker(a.kind, echo, queue=a.queue or "default", owner=a.owner, client=client,
                            lease_ms=a.lease_ms, wait_ms=a.wait_ms, max_jobs=a.max_jobs)
    except Unauthorized as e:
        _log("%s refused the request: %d %s: %s" % (client.base_url, e.status, e.code, e.message))
        if e.status == 401:
            _log("set FENCED_TOKEN to one of the server's tokens (its --tokens-file or FENCED_TOKENS)"
                 if client.token is None else "FENCED_TOKEN is not one of the server's tokens")
        return 1
    except FencedError as e:
        _log("%s refused the request: %s" % (client.base_url, e))
        return 1
    print(json.dumps(counts), flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
