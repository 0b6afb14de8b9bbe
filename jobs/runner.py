"""The child process that runs one job: `jobs.runner --home HOME JOB_ID` (started by its
worker as `python -m snowfire.jobs.runner`).

Its worker starts it with stdout and stderr sent to HOME/jobs/<id>.log, heartbeats the lease
while it runs and kills its process group to cancel it. The runner is tethered to that worker
and that lease (tether.py): it dies when the worker dies or the lease is no longer its own. On
success it writes what the job returned to HOME/jobs/<id>.result.json (atomically:
rundir.write_json) and exits 0; the worker makes the completion write. It never writes to the
queue.

What each kind runs and returns: jobs/kinds.py. Its torch threads: its worker's budget, passed
down in its environment (options/threads.py), applied before the job starts.
"""

from __future__ import annotations

import argparse
import json
import sys

from snowfire.options import use_threads
from snowfire.rundir import write_json

from . import tether
from .home import Home
from .kinds import job_kind, split_limits
from .queue import JobQueue


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="snowfire.jobs.runner", description=__doc__)
    p.add_argument("--home", required=True)
    p.add_argument("--parent", type=int, help="pid of the worker: the runner dies with it")
    p.add_argument("--lease", help="the claim's lease token: the runner stops once it is not")
    p.add_argument("--watch", type=float, default=2.0, help="seconds between lease checks")
    p.add_argument("job_id")
    args = p.parse_args(argv)
    home = Home.resolve(args.home)
    queue = JobQueue(home.queue)
    if args.parent is not None:
        tether.die_with_parent(args.parent)
        tether.watch(queue, args.job_id, args.lease, args.parent, args.watch)
    job = queue.peek(args.job_id)
    print(f"{job.kind} job {job.id}: {json.dumps(job.params)}", flush=True)
    _, params = split_limits(dict(job.params))  # the worker enforces the limits
    print(f"threads: {use_threads().why()}", flush=True)  # its worker's share (threads_env)
    result = job_kind(job.kind).run(params)
    write_json(home.result(job.id), result)
    print(f"{job.kind} job {job.id} done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
