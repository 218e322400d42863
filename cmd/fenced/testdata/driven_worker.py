"""A fenced_client Worker that the Go tests of cmd/fenced drive through
files in a control directory (pyworkerrun_test.go).

    driven_worker.py URL QUEUE CONTROL_DIR LEASE_MS

It runs until the file "stop" appears in CONTROL_DIR, then calls
``stop(timeout=...)`` with the number of seconds the file holds (no timeout
when it is empty), waits for ``run()`` to return and prints the worker's
counts as one JSON line, with ``"run_returned"``. Its log goes to stderr.
The handlers, by kind:

    echo     returns its args
    gate     waits for the file "open-<args.gate>" in CONTROL_DIR, then
             returns {"gate": <args.gate>}
    forever  never returns; prints "stopped <reason>" once its attempt's
             ``stopped`` is set, and sleeps on
    notjson  returns what JSON cannot hold: a set (args.what "set") or NaN
"""

import dataclasses
import json
import logging
import os
import sys
import time

from fenced_client import Client, JobContext, Worker


def main() -> None:
    url, queue, control, lease_ms = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")
    w = Worker(Client(url, timeout=5.0), queue, owner="driven", concurrency=4, lease_ms=lease_ms,
               heartbeat_every=0.5, wait_ms=2000)

    @w.handler("echo")
    def echo(ctx: JobContext) -> object:
        return ctx.args

    @w.handler("gate")
    def gate(ctx: JobContext) -> object:
        name = ctx.args["gate"]
        while not os.path.exists(os.path.join(control, "open-" + name)):
            time.sleep(0.02)
        return {"gate": name}

    @w.handler("forever")
    def forever(ctx: JobContext) -> object:
        ctx.stopped.wait()
        print("stopped", ctx.stop_reason, flush=True)
        while True:
            time.sleep(1)

    @w.handler("notjson")
    def notjson(ctx: JobContext) -> object:
        return {1, 2} if ctx.args.get("what") == "set" else float("nan")

    t = w.start()
    stop = os.path.join(control, "stop")
    while not os.path.exists(stop):
        time.sleep(0.02)
    with open(stop) as f:
        timeout = f.read().strip()
    if timeout:
        w.stop(timeout=float(timeout))
    else:
        w.stop()
    t.join(60)
    print(json.dumps(dict(dataclasses.asdict(w.stats), run_returned=not t.is_alive())), flush=True)


if __name__ == "__main__":
    main()
