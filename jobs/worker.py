"""A worker: claims jobs of one kind from the queue and runs each in a child process.

    loop: claim the oldest queued job (or sleep `poll` seconds) -> start the child
    (`jobs.runner`, its own process group, output to HOME/jobs/<id>.log, its torch threads
    this worker's budget: options/threads.py) -> heartbeat
    the lease: "cancel" kills the child and marks the job cancelled,
    "lost" (the lease expired and the job went back to the queue) kills it and writes nothing;
    past the job's deadline the child is killed and the job failed ("deadline exceeded after
    N s"), its run directory kept as it is and marked (rundir.DEADLINE)
    -> child exits: done with its result, or failed with its exit code and last log line.
    Heartbeats come every min(poll, lease/3) seconds, so a cancel takes effect within that.

Stopping the worker (Ctrl-C, SIGTERM) kills the child and gives the job back to the queue.
`WorkerConfig` holds a worker's options (the `snowfire worker` flags are derived from it).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from snowfire.options import check, option, thread_budget, threads_env

from .home import HOME_ENV, Home
from .joblog import read_tail, tail_lines
from .kinds import JOB_KINDS, split_limits
from .processes import stop_processes
from .queue import Job, JobQueue

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerConfig:
    """One `snowfire worker`: which jobs it runs, from where, and how often it checks."""

    kind: str = option(help="the kind of job to run", choices=tuple(JOB_KINDS))
    home: str | None = option(None, f"data directory (default: ${HOME_ENV})")
    once: bool = option(False, "run at most one job, then exit")
    poll: float = option(2.0, "seconds between claims when the queue is empty", gt=0)
    lease: float = option(
        60.0,
        "seconds a claim lasts without a heartbeat (a dead worker's job is queued again after it)",
        gt=0,
    )
    grace: float = option(
        10.0, "seconds a stopped job's process gets between SIGTERM and SIGKILL", ge=0
    )
    deadline: float | None = option(
        None,
        "wall-clock seconds an attempt of a job may run when the job sets no `deadline` "
        "param (none: the kind's default, jobs/kinds.py: extract 24 h, train 12 h, finetune "
        "72 h, compare 7 days)",
        gt=0,
    )

    def __post_init__(self) -> None:
        check(self)


class Worker:
    """Runs jobs of `kind` from the queue in `home`; lease, poll, grace: see WorkerConfig."""

    def __init__(
        self,
        home: Home,
        kind: str,
        *,
        lease: float = WorkerConfig.lease,
        poll: float = WorkerConfig.poll,
        grace: float = WorkerConfig.grace,
        deadline: float | None = WorkerConfig.deadline,
        worker_id: str | None = None,
    ) -> None:
        WorkerConfig(kind=kind, lease=lease, poll=poll, grace=grace, deadline=deadline)
        self.home, self.kind = home, kind
        self.lease, self.poll, self.grace = lease, poll, grace
        self.deadline = deadline or JOB_KINDS[kind].deadline
        self.id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.queue = JobQueue(home.queue)
        # its runners' threads: this worker's budget, the one torch process it runs at a time
        self.threads = thread_budget()
        home.jobs.mkdir(parents=True, exist_ok=True)

    @property
    def beat(self) -> float:
        """Seconds between heartbeats (and between the runner's own lease checks)."""
        return min(self.poll, self.lease / 3)

    def deadline_of(self, job: Job) -> float:
        """Wall-clock seconds an attempt of `job` may run: its `deadline` param, else this
        worker's default for its kind."""
        limits, _ = split_limits(dict(job.params))
        return limits.deadline or self.deadline

    def command(self, job: Job) -> list[str]:
        """The child process that runs `job`."""
        return [
            sys.executable,
            "-m",
            "snowfire.jobs.runner",
            "--home",
            str(self.home.root),
            "--parent",
            str(os.getpid()),
            "--lease",
            str(job.lease),
            "--watch",
            str(self.beat),
            job.id,
        ]

    def run(self, *, once: bool = False, stop: threading.Event | None = None) -> int:
        """Claim and run jobs until `stop` is set (or, with `once`, after at most one job);
        returns the number of jobs run."""
        stop = stop or threading.Event()
        ran = 0
        while not stop.is_set():
            self.queue.beat_worker(self.id, self.kind)
            job = self.queue.claim(self.kind, self.id, self.lease)
            if job is not None:
                self.run_job(job)
                ran += 1
            if once:
                break
            if job is None:
                stop.wait(self.poll)
        return ran

    def run_job(self, job: Job) -> str:
        """Run a claimed job to its end; returns its final status, or "lost"."""
        assert job.lease is not None  # a claimed job holds its lease
        result = self.home.result(job.id)
        result.unlink(missing_ok=True)
        log.info("worker %s: job %s (%s, attempt %d)", self.id, job.id, job.kind, job.attempts)
        with self.home.log(job.id).open("ab") as fh:
            fh.write(f"--- attempt {job.attempts} by worker {self.id}\n".encode())
            fh.flush()
            child = subprocess.Popen(
                self.command(job),
                stdout=fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **threads_env(1, self.threads)},
                cwd=self.home.jobs,
                start_new_session=True,  # its own process group: a cancel kills all of it
            )
        try:
            status = self._watch(job, child)
        except BaseException:  # stopped (Ctrl-C, SIGTERM): hand the job back to the queue
            self._stop(child)
            self.queue.release(job.id, job.lease)
            raise
        if status is not None:
            return status
        return self._complete(job, child.returncode, result)

    def _watch(self, job: Job, child: subprocess.Popen) -> str | None:
        """Heartbeat until the child exits (None) or must be stopped ("cancelled", "lost",
        or "failed" at the job's deadline)."""
        assert job.lease is not None  # a claimed job holds its lease
        started, limit = time.monotonic(), self.deadline_of(job)
        while True:
            left = limit - (time.monotonic() - started)
            try:
                child.wait(timeout=max(0.0, min(self.beat, left)))
                return None
            except subprocess.TimeoutExpired:
                pass
            if time.monotonic() - started >= limit:
                self._stop(child)
                return self.expire(job, limit, time.monotonic() - started)
            self.queue.beat_worker(self.id, self.kind)
            beat = self.queue.heartbeat(job.id, job.lease, self.lease)
            if beat == "cancel":
                self._stop(child)
                ok = self.queue.finish(job.id, job.lease, "cancelled", error="cancelled on request")
                log.info("worker %s: job %s cancelled", self.id, job.id)
                return "cancelled" if ok else "lost"
            if beat == "lost":
                self._stop(child)
                log.warning("worker %s: lost the lease of job %s; stopped it", self.id, job.id)
                return "lost"

    def expire(self, job: Job, limit: float, elapsed: float) -> str:
        """Fail `job`, whose runner was killed at its deadline; its run directory (params
        `out`, where the kind has one) is left as the kill left it, marked rundir.DEADLINE."""
        assert job.lease is not None  # a claimed job holds its lease
        from snowfire.rundir import DEADLINE, write_json

        error = f"deadline exceeded after {limit:g} s"
        out = job.params.get("out")
        if out and Path(out).is_dir():
            mark = {
                "job": job.id,
                "kind": job.kind,
                "attempt": job.attempts,
                "deadline_s": limit,
                "elapsed_s": round(elapsed, 3),
                "at": time.time(),
            }
            write_json(Path(out) / DEADLINE, mark)
            error += f"; the partial run {out} is kept, marked by {DEADLINE}"
        ok = self.queue.finish(job.id, job.lease, "failed", error=error)
        log.warning("worker %s: job %s %s", self.id, job.id, error)
        return "failed" if ok else "lost"

    def _complete(self, job: Job, code: int, result: Path) -> str:
        assert job.lease is not None  # a claimed job holds its lease
        error: str | None
        if code == -signal.SIGKILL:  # killed from outside (OOM killer, kill -9): run it again
            error = f"its runner was killed (SIGKILL) {job.attempts} times"
            status = self.queue.retry(job.id, job.lease, error)
            log.warning("worker %s: job %s's runner was killed; now %s", self.id, job.id, status)
            return status or "lost"
        if code == 0 and result.is_file():
            status, metrics, error = "done", json.loads(result.read_text()), None
        else:
            last = tail_lines(read_tail(self.home.log(job.id)), 1)
            status, metrics = "failed", None
            error = f"exit code {code}" + (f": {last[0]}" if last else "")
        if not self.queue.finish(job.id, job.lease, status, metrics=metrics, error=error):
            log.warning("worker %s: job %s finished but its lease was lost", self.id, job.id)
            return "lost"
        log.info("worker %s: job %s %s", self.id, job.id, status)
        return status

    def _stop(self, child: subprocess.Popen) -> None:
        """SIGTERM the child's process group, SIGKILL it after `grace` seconds."""
        stop_processes([child], self.grace, group=True)


def _interrupt(signum, frame) -> None:
    # the first SIGTERM/SIGINT stops the worker; later ones must not interrupt its clean-up
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def run_worker(config: WorkerConfig) -> int:
    """`snowfire worker`: run until Ctrl-C or SIGTERM (exit 0), or after one job with `once`;
    `home` None reads SNOWFIRE_HOME."""
    kind = config.kind
    worker = Worker(
        Home.resolve(config.home),
        kind,
        lease=config.lease,
        poll=config.poll,
        grace=config.grace,
        deadline=config.deadline,
    )
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    print(
        f"snowfire worker {worker.id}: {kind} jobs from {worker.queue.path}; torch threads: "
        f"{worker.threads.why()}",
        file=sys.stderr,
    )
    try:
        worker.run(once=config.once)
    except KeyboardInterrupt:
        print(f"snowfire worker {worker.id}: stopped", file=sys.stderr)
    return 0


def check_worker(config: WorkerConfig) -> int:
    """Healthcheck: 0 when a `kind` worker on this host was seen within two beats (of a
    worker with this config's poll and lease)."""
    within = 2 * max(config.poll, config.lease / 3) + 5
    alive = JobQueue(Home.resolve(config.home).queue).worker_alive(config.kind, within)
    print(f"{config.kind} worker on {socket.gethostname()}: {'alive' if alive else 'not seen'}")
    return 0 if alive else 1
