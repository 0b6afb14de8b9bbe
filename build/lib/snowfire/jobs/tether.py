"""A runner never outlives its worker, and never runs on a lease that is no longer its own.

Two mechanisms, because a worker can die in ways it cannot clean up after (`kill -9`, the OOM
killer, a lost node):

1. Linux: the runner asks the kernel for SIGKILL when its parent dies (prctl
   PR_SET_PDEATHSIG), then checks that the parent is still the worker that started it (the
   worker could have died between fork and prctl).
2. Everywhere: a watcher thread reads the job's row every `every` seconds (read-only) and
   kills the runner's process group when the parent changed (the worker died: POSIX reparents
   the runner), when the job is no longer running under this runner's lease token (it was
   cancelled, or re-queued and claimed by another worker), or when the lease expired (the
   worker stopped heartbeating: the next claim will start the job again).

Either way the job can then run again only once the lease is gone, so two runners never hold
one job at once; the run directory's own lock (cache.files.hold) stops a stray one besides.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

from .queue import JobQueue

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent: int) -> bool:
    """Ask for SIGKILL when the parent dies (Linux); False where the kernel cannot. Exits at
    once when `parent` is already gone."""
    armed = False
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        armed = libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    if os.getppid() != parent:
        stop(f"the worker (pid {parent}) is gone")
    return armed


def stop(reason: str) -> None:
    """Kill this runner and everything it started (its process group when it leads one)."""
    print(f"runner {os.getpid()}: {reason}; stopping", file=sys.stderr, flush=True)
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(137)


def watch(
    queue: JobQueue, job_id: str, lease: str, parent: int | None, every: float
) -> threading.Thread:
    """Start the watcher thread (a daemon: it ends with the runner); parent None: no parent to
    watch (a Ray task: Ray kills it with its driver), the lease only."""

    def loop() -> None:
        while True:
            time.sleep(every)
            reason = why_stop(queue, job_id, lease, parent)
            if reason:
                stop(reason)

    thread = threading.Thread(target=loop, name=f"tether-{job_id}", daemon=True)
    thread.start()
    return thread


def why_stop(queue: JobQueue, job_id: str, lease: str, parent: int | None) -> str | None:
    """Why this runner must stop now, or None."""
    if parent is not None and os.getppid() != parent:
        return f"the worker (pid {parent}) is gone"
    state = queue.lease_state(job_id)
    if state is None:
        return f"job {job_id} is no longer in the queue"
    status, current, until = state
    if status != "running" or current != lease:
        return f"job {job_id} is {status} under another lease"
    if until is not None and until < time.time():
        return f"the lease of job {job_id} expired (the worker stopped heartbeating)"
    return None
