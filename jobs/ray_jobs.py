"""Jobs on a Ray cluster: `snowfire serve --home DIR --ray ADDRESS` (extra 'ray').

The REST contract and the SQLite job table stay as they are; what changes is who runs a
claimed job. Instead of `snowfire worker` processes on this host, the service runs `slots`
dispatcher threads per kind. Each claims a job like a worker (same lease, same heartbeats) and
runs it as a Ray task with the resources its kind needs (a GPU for extract, finetune and
compare when the cluster has GPUs, else a CPU), on whichever node has them:

    claim -> Ray task (a fresh worker process: max_calls=1) writes HOME/jobs/<id>.log and
    returns the result -> heartbeat while it runs: "cancel" = ray.cancel(force=True), the job
    cancelled; the task's process killed (lost node, OOM) = queued again, as a SIGKILLed
    runner is; an exception = failed with its message; past the job's deadline (as a
    worker's: Worker.deadline_of) = ray.cancel(force=True), the job failed, its run marked.

HOME must be a directory every node mounts (the job log and the runs live there); the store
may be s3://. The task watches its lease as a runner does (tether.py), and Ray kills a
driver's tasks when the driver (this service) dies: a job never runs twice at once. Cells of
a sweep (many train jobs, one per head) run in parallel across the cluster, each reading the
shared store; each job's seed is in its params, so results equal sequential runs.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from snowfire.options import use_threads

from .home import Home
from .joblog import read_tail, tail_lines
from .kinds import JOB_KINDS, job_kind, split_limits
from .queue import Job
from .worker import Worker

log = logging.getLogger(__name__)

#: CPUs a job's Ray task asks for; its torch threads are as many.
TASK_CPUS = 1


def run_task(home_root: str, job_id: str, lease: str, every: float) -> dict[str, Any]:
    """The body of a job's Ray task (a process of its own: its output goes to the job log)."""
    from . import tether
    from .queue import JobQueue

    home = Home(Path(home_root))
    queue = JobQueue(home.queue)
    with open(home.log(job_id), "ab", buffering=0) as fh:
        os.dup2(fh.fileno(), 1)
        os.dup2(fh.fileno(), 2)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    tether.watch(queue, job_id, lease, None, every)
    job = queue.peek(job_id)
    print(
        f"{job.kind} job {job.id} on Ray node {os.uname().nodename}, pid {os.getpid()}", flush=True
    )
    _, params = split_limits(dict(job.params))  # the dispatcher enforces the limits
    budget = use_threads(TASK_CPUS, source="ray num_cpus")
    print(f"threads: {budget.why()}", flush=True)
    result = job_kind(job.kind).run(params)
    print(f"{job.kind} job {job.id} done", flush=True)
    return result


@functools.cache
def _remote_task():
    import ray

    return ray.remote(max_calls=1)(run_task)  # a fresh process per job: its fds, its GPU memory


class RayWorker(Worker):
    """A Worker whose jobs run as Ray tasks instead of child processes."""

    def run_job(self, job: Job) -> str:
        import ray

        from snowfire.extractor import cluster_gpus

        assert job.lease is not None  # a claimed job holds its lease
        log.info("ray worker %s: job %s (%s, attempt %d)", self.id, job.id, job.kind, job.attempts)
        with self.home.log(job.id).open("ab") as fh:
            fh.write(f"--- attempt {job.attempts} by {self.id} on Ray\n".encode())
        gpu = job_kind(job.kind).gpu and cluster_gpus() > 0
        try:
            task = _remote_task().options(
                num_cpus=TASK_CPUS, num_gpus=1 if gpu else 0, max_retries=0
            )
            ref = task.remote(str(self.home.root), job.id, job.lease, self.beat)
        except Exception as err:  # Ray refused the task: say so rather than hold the lease
            log.exception("ray worker %s: job %s could not be submitted", self.id, job.id)
            self.queue.finish(job.id, job.lease, "failed", error=f"Ray refused the task: {err}")
            return "failed"
        started, limit = time.monotonic(), self.deadline_of(job)
        try:
            while True:
                left = limit - (time.monotonic() - started)
                ready, _ = ray.wait([ref], timeout=max(0.0, min(self.beat, left)))
                if ready:
                    break
                if time.monotonic() - started >= limit:
                    ray.cancel(ref, force=True)
                    return self.expire(job, limit, time.monotonic() - started)
                self.queue.beat_worker(self.id, self.kind)
                beat = self.queue.heartbeat(job.id, job.lease, self.lease)
                if beat in ("cancel", "lost"):
                    ray.cancel(ref, force=True)
                    if beat == "lost":
                        log.warning("ray worker %s: lost the lease of job %s", self.id, job.id)
                        return "lost"
                    ok = self.queue.finish(
                        job.id, job.lease, "cancelled", error="cancelled on request"
                    )
                    return "cancelled" if ok else "lost"
        except BaseException:  # the service stops: hand the job back to the queue
            ray.cancel(ref, force=True)
            self.queue.release(job.id, job.lease)
            raise
        return self._finish(job, ref)

    def _finish(self, job: Job, ref) -> str:
        import ray

        assert job.lease is not None  # a claimed job holds its lease
        error: str | None
        try:
            metrics, status, error = ray.get(ref), "done", None
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError) as err:
            now = self.queue.retry(job.id, job.lease, f"its Ray task's process died: {err}")
            log.warning("ray worker %s: job %s's task died; now %s", self.id, job.id, now)
            return now or "lost"
        except ray.exceptions.RayTaskError as err:
            last = tail_lines(read_tail(self.home.log(job.id)), 1)
            cause = err.cause if err.cause is not None else err
            metrics, status = None, "failed"
            error = f"{type(cause).__name__}: {cause}" + (f" (log: {last[0]})" if last else "")
        if not self.queue.finish(job.id, job.lease, status, metrics=metrics, error=error):
            return "lost"
        log.info("ray worker %s: job %s %s", self.id, job.id, status)
        return status


class RayDispatch:
    """`slots` RayWorker threads per job kind, for the life of the service."""

    def __init__(self, home: Home, address: str, *, slots: int, poll: float = 1.0):
        from snowfire.extractor import connect_ray

        connect_ray(address)
        self.stop = threading.Event()
        self.threads = []
        for kind in JOB_KINDS:
            for slot in range(slots):
                worker = RayWorker(
                    home, kind, poll=poll, worker_id=f"ray:{kind}:{slot}:{os.getpid()}"
                )
                thread = threading.Thread(
                    target=worker.run, kwargs={"stop": self.stop}, name=worker.id, daemon=True
                )
                thread.start()
                self.threads.append(thread)

    def close(self) -> None:
        self.stop.set()
