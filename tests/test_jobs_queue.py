"""The SQLite job queue and the worker: atomic claims under concurrency, status transitions,
lease expiry (re-queue, attempts kept, a stale worker cannot complete), cancel (queued and
running), failures. Workers here run stand-in child processes (tiny `python -c` scripts)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from snowfire.jobs import Home, JobNotFoundError, JobQueue, JobStateError
from snowfire.jobs.worker import Worker

CLAIMER = """
import json, sys
from snowfire.jobs import JobQueue
q = JobQueue(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
ids = []
while (job := q.claim("train", sys.argv[2], 60.0)) is not None:
    ids.append(job.id)
print(json.dumps(ids), flush=True)
"""


class StandIn(Worker):
    """A worker whose child is a given `python -c` script (argv[1]: the result file)."""

    def __init__(self, home: Home, script: str, **kw) -> None:
        super().__init__(home, "train", **kw)
        self.script = script

    def command(self, job):
        return [sys.executable, "-c", self.script, str(self.home.result(job.id))]


class Clock:
    """The queue's wall clock, moved by the test: a lease expires when the test says so, not
    after a sleep that a loaded machine may stretch past the next step."""

    def __init__(self, now: float = 1.7e9) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


WRITE_RESULT = "import json, sys; json.dump({'dev': {'accuracy': 0.75}}, open(sys.argv[1], 'w'))"
SLEEP = "import os, time; print('child', os.getpid(), flush=True); time.sleep(120)"


@pytest.fixture
def home(tmp_path) -> Home:
    return Home(tmp_path)


@pytest.fixture
def queue(home) -> JobQueue:
    return JobQueue(home.queue)


def _wait(predicate, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.subprocess  # claimers in two processes
def test_each_job_is_claimed_once_by_threads_and_processes(queue):
    submitted = {queue.submit("train", {"n": i}).id for i in range(120)}
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER, str(queue.path), f"proc{i}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(2)
    ]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    go, claimed = threading.Event(), {}

    def claim_all(name):
        go.wait()
        claimed[name] = []
        while (job := queue.claim("train", name, 60.0)) is not None:
            claimed[name].append(job.id)

    threads = [threading.Thread(target=claim_all, args=(f"thread{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    go.set()
    for t in threads:
        t.join(60)
    for i, p in enumerate(procs):
        out, _ = p.communicate(timeout=60)
        claimed[f"proc{i}"] = json.loads(out)
    every = [job_id for ids in claimed.values() for job_id in ids]
    assert sorted(every) == sorted(submitted)  # each job claimed exactly once
    assert all(j.status == "running" and j.attempts == 1 for j in queue.list(limit=1000))
    assert {j.worker for j in queue.list(limit=1000)} <= set(claimed)


def test_status_transitions(queue):
    job = queue.submit("train", {"epochs": 1})
    assert (job.status, job.attempts, job.worker) == ("queued", 0, None)
    assert queue.claim("extract", "w1", 30.0) is None  # another kind's queue
    running = queue.claim("train", "w1", 30.0)
    assert (running.id, running.status, running.attempts, running.worker) == (
        job.id,
        "running",
        1,
        "w1",
    )
    assert running.lease_until > time.time() + 25
    assert queue.heartbeat(job.id, running.lease, 30.0) == "running"
    assert queue.finish(job.id, running.lease, "done", metrics={"dev": {"accuracy": 1.0}})
    assert not queue.finish(job.id, running.lease, "failed", error="again")  # completes once
    done = queue.get(job.id)
    assert (done.status, done.metrics, done.error) == ("done", {"dev": {"accuracy": 1.0}}, None)
    assert done.finished_at >= done.started_at >= done.created_at
    with pytest.raises(JobStateError, match=f"^job {job.id} is already done: nothing to cancel$"):
        queue.cancel(job.id)
    with pytest.raises(JobNotFoundError, match="no job 'nope'"):
        queue.get("nope")
    assert queue.claim("train", "w2", 30.0) is None


def test_expired_lease_requeues_and_the_stale_worker_cannot_complete(home):
    clock = Clock()
    queue = JobQueue(home.queue, clock=clock)
    job = queue.submit("train", {})
    first = queue.claim("train", "stale", 0.2)
    clock.advance(0.19)  # within the lease: still running
    assert (queue.get(job.id).status, queue.get(job.id).worker) == ("running", "stale")
    clock.advance(0.02)  # "stale" stopped heartbeating: its lease has run out
    assert (queue.get(job.id).status, queue.get(job.id).attempts) == ("queued", 1)
    second = queue.claim("train", "fresh", 30.0)
    assert (second.id, second.attempts, second.worker) == (job.id, 2, "fresh")
    assert queue.heartbeat(job.id, first.lease, 30.0) == "lost"
    assert not queue.finish(job.id, first.lease, "done", metrics={"from": "stale"})
    assert not queue.release(job.id, first.lease)
    assert queue.finish(job.id, second.lease, "done", metrics={"from": "fresh"})
    assert queue.get(job.id).metrics == {"from": "fresh"}


def test_a_job_whose_workers_keep_dying_fails_after_max_attempts(home):
    clock = Clock()
    queue = JobQueue(home.queue, max_attempts=2, clock=clock)
    job = queue.submit("train", {})
    for _ in range(2):
        assert queue.claim("train", "dies", 0.05).id == job.id
        clock.advance(0.1)
    lost = queue.get(job.id)
    assert (lost.status, lost.attempts) == ("failed", 2)
    assert lost.error == "worker lost: its lease expired on each of 2 attempts"


@pytest.mark.subprocess  # the worker's child process
def test_a_dead_workers_job_is_picked_up_again_and_completes(home, queue):
    job = queue.submit("train", {})
    # a worker that claimed the job a minute ago, on a lease of 0.2 s, and died
    dead = JobQueue(home.queue, clock=lambda: time.time() - 60).claim("train", "dead", 0.2)
    worker = StandIn(home, WRITE_RESULT, lease=5.0, poll=0.05)
    assert worker.run(once=True) == 1
    done = queue.get(job.id)
    assert (done.status, done.attempts, done.worker) == ("done", 2, worker.id)
    assert done.metrics == {"dev": {"accuracy": 0.75}}
    assert not queue.finish(job.id, dead.lease, "failed", error="late")
    assert f"--- attempt 2 by worker {worker.id}" in home.log(job.id).read_text()


def test_cancel_a_queued_job_at_once(queue):
    job = queue.submit("train", {})
    cancelled = queue.cancel(job.id)
    assert (cancelled.status, cancelled.cancel_requested) == ("cancelled", True)
    assert cancelled.finished_at is not None and cancelled.attempts == 0
    assert queue.claim("train", "w", 30.0) is None


@pytest.mark.subprocess  # the worker's child process
def test_cancel_a_running_job_stops_its_child(home, queue):
    job = queue.submit("train", {})
    worker = StandIn(home, SLEEP, lease=30.0, poll=0.1, grace=5.0)
    thread = threading.Thread(target=worker.run, kwargs={"once": True})
    thread.start()
    _wait(
        lambda: "child" in home.log(job.id).read_text() if home.log(job.id).exists() else 0,
        what="the child to start",
    )
    pid = int(home.log(job.id).read_text().split("child")[1].split()[0])
    flagged = queue.cancel(job.id)
    assert (flagged.status, flagged.cancel_requested) == ("running", True)
    thread.join(20)
    assert not thread.is_alive()
    cancelled = queue.get(job.id)
    assert (cancelled.status, cancelled.error) == ("cancelled", "cancelled on request")
    with pytest.raises(ProcessLookupError) as gone:
        os.kill(pid, 0)  # the child is gone (and reaped by the worker)
    assert gone.value.errno == errno.ESRCH


@pytest.mark.subprocess  # the worker's child process
def test_a_failing_child_fails_the_job_with_its_exit_code_and_last_line(home, queue):
    job = queue.submit("train", {})
    fails = "print('ValueError: no dev split'); raise SystemExit(3)"
    StandIn(home, fails, poll=0.05).run(once=True)
    failed = queue.get(job.id)
    assert (failed.status, failed.metrics) == ("failed", None)
    assert failed.error == "exit code 3: ValueError: no dev split"


@pytest.mark.subprocess  # the worker's child process
def test_a_worker_that_loses_its_lease_stops_the_child_and_writes_nothing(home, queue):
    job = queue.submit("train", {})
    worker = StandIn(home, SLEEP, lease=0.6, poll=0.1, grace=5.0)
    claimed = queue.claim("train", worker.id, worker.lease)
    queue.finish(job.id, claimed.lease, "failed", error="someone else")  # the lease is gone
    assert worker.run_job(claimed) == "lost"
    assert queue.get(job.id).error == "someone else"


def test_worker_checks_its_arguments(home):
    with pytest.raises(
        ValueError,
        match="WorkerConfig.kind: expected one of extract, train, finetune, compare, layers, "
        "got 'serve'",
    ):
        Worker(home, "serve")
    with pytest.raises(ValueError, match="WorkerConfig.lease: expected > 0, got 0"):
        Worker(home, "train", lease=0)
    with pytest.raises(ValueError, match="WorkerConfig.grace: expected >= 0, got -1"):
        Worker(home, "train", grace=-1)


@pytest.mark.subprocess  # the worker's child process
def test_a_stopped_worker_kills_its_child_and_hands_the_job_back(home, queue):
    job = queue.submit("train", {})
    worker = StandIn(home, SLEEP, lease=30.0, poll=0.1, grace=5.0)

    def interrupted(*args):  # Ctrl-C / SIGTERM arrive as KeyboardInterrupt (run_worker)
        if "child" in home.log(job.id).read_text():
            raise KeyboardInterrupt("Ctrl-C")
        return "running"

    worker.queue.heartbeat = interrupted
    with pytest.raises(KeyboardInterrupt, match="Ctrl-C"):
        worker.run(once=True)
    pid = int(home.log(job.id).read_text().split("child")[1].split()[0])
    with pytest.raises(ProcessLookupError) as gone:
        os.kill(pid, 0)
    assert gone.value.errno == errno.ESRCH
    back = queue.get(job.id)
    assert (back.status, back.attempts, back.worker, back.lease) == ("queued", 1, None, None)
    assert queue.claim("train", "next", 30.0).attempts == 2


def test_an_older_queue_file_gains_the_new_columns(tmp_path):
    import sqlite3

    path = tmp_path / "queue.sqlite"
    conn = sqlite3.connect(path)  # the first release's table, with a job in it
    conn.execute(
        "CREATE TABLE jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, "
        "kind TEXT NOT NULL, params TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'queued', "
        "attempts INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL, started_at REAL, "
        "finished_at REAL, worker TEXT, lease TEXT, lease_until REAL, "
        "cancel_requested INTEGER NOT NULL DEFAULT 0, metrics TEXT, error TEXT)"
    )
    conn.execute("INSERT INTO jobs (id, kind, params, created_at) VALUES ('old', 'train', '{}', 1)")
    conn.commit()
    conn.close()
    queue = JobQueue(path)
    assert queue.get("old").idempotency_key is None
    job = queue.submit("train", {}, key="k", request={"a": 1})
    assert queue.submit("train", {}, key="k", request={"a": 1}).id == job.id
    assert [j.id for j in queue.list()] == [job.id, "old"]


@pytest.mark.subprocess  # openers in their own processes
def test_many_processes_open_one_fresh_queue_file_at_once(tmp_path):
    # snowfire up starts the API and three workers together: each creates or migrates the file
    path = tmp_path / "queue.sqlite"
    code = (
        "import sys, time; from snowfire.jobs import JobQueue\n"
        "time.sleep(max(0.0, float(sys.argv[2]) - time.time()))\n"  # all start together
        "JobQueue(sys.argv[1]).submit('train', {})"
    )
    start = str(time.time() + 2.0)
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(path), start], stderr=subprocess.PIPE)
        for _ in range(8)
    ]
    errors = [p.communicate()[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, "\n".join(errors)
    assert len(JobQueue(path).list()) == 8


def test_tether_reasons_to_stop(queue):
    from snowfire.jobs.tether import why_stop

    me = os.getpid()
    parent = os.getppid()
    job = queue.submit("train", {})
    assert why_stop(queue, "nope", "x", parent) == "job nope is no longer in the queue"
    claim = queue.claim("train", "w", 30.0)
    assert why_stop(queue, job.id, claim.lease, parent) is None
    assert why_stop(queue, job.id, claim.lease, me) == f"the worker (pid {me}) is gone"
    assert (
        why_stop(queue, job.id, "another", parent) == f"job {job.id} is running under another lease"
    )
    queue.heartbeat(job.id, claim.lease, -1.0)  # the lease ran out
    assert why_stop(queue, job.id, claim.lease, parent) == (
        f"the lease of job {job.id} expired (the worker stopped heartbeating)"
    )
    queue.reap()  # re-queued: no longer running under this lease
    assert (
        why_stop(queue, job.id, claim.lease, parent)
        == f"job {job.id} is queued under another lease"
    )


def test_a_killed_run_is_queued_again_until_max_attempts(home):
    queue = JobQueue(home.queue, max_attempts=2)
    job = queue.submit("train", {})
    first = queue.claim("train", worker="w", lease=30)
    assert queue.retry(job.id, first.lease, "killed") == "queued"
    assert queue.retry(job.id, first.lease, "killed") is None  # that lease is gone
    second = queue.claim("train", worker="w", lease=30)
    assert second.attempts == 2
    assert queue.retry(job.id, second.lease, "its runner was killed (SIGKILL) 2 times") == "failed"
    assert queue.get(job.id).error == "its runner was killed (SIGKILL) 2 times"


#: A runner that writes part of its run, starts a grandchild, then hangs.
HANGS = """
import os, pathlib, subprocess, sys, time
out = pathlib.Path(sys.argv[2]); out.mkdir(parents=True, exist_ok=True)
(out / "log.jsonl").write_text('{"epoch": 1}\\n')
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
print("child", os.getpid(), grandchild.pid, flush=True)
time.sleep(120)
"""


def _dead(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


class Hangs(StandIn):
    def command(self, job):
        return [*super().command(job), job.params["out"]]


@pytest.mark.subprocess  # the worker's child process
@pytest.mark.parametrize("where", ["param", "worker"])
def test_a_job_past_its_deadline_is_killed_failed_and_its_partial_run_kept_and_marked(
    home, queue, where
):
    from snowfire.rundir import DEADLINE

    out = home.root / "runs" / "hung"
    # long enough for the runner to start its grandchild on a loaded machine; not a timing test
    params = {"out": str(out), "deadline": 4.0} if where == "param" else {"out": str(out)}
    job = queue.submit("train", params)
    worker = Hangs(
        home, HANGS, lease=30.0, poll=0.1, grace=5.0, deadline=None if where == "param" else 4.0
    )
    assert worker.run(once=True) == 1
    failed = queue.get(job.id)
    assert failed.status == "failed" and failed.metrics is None
    assert failed.error == (
        f"deadline exceeded after 4 s; the partial run {out} is kept, marked by {DEADLINE}"
    )
    assert failed.attempts == 1  # not run again: a deadline is not a crash
    assert queue.claim("train", "next", 30.0) is None
    pids = [int(p) for p in home.log(job.id).read_text().split("child")[1].split()[:2]]
    for pid in pids:  # the runner and what it started are gone (or dead, awaiting init's reap)
        _wait(lambda pid=pid: _dead(pid), timeout=5.0, what=f"process {pid} to die")
    assert (out / "log.jsonl").read_text() == '{"epoch": 1}\n'  # kept as the kill left it
    mark = json.loads((out / DEADLINE).read_text())
    assert (mark["job"], mark["kind"], mark["attempt"], mark["deadline_s"]) == (
        job.id,
        "train",
        1,
        4.0,
    )
    assert mark["elapsed_s"] >= 4.0
    assert not home.result(job.id).exists()


def test_each_kind_has_a_default_deadline_a_worker_and_a_job_may_override(home, queue):
    from snowfire.jobs import JOB_KINDS

    job = queue.submit("finetune", {})
    assert Worker(home, "finetune").deadline_of(job) == JOB_KINDS["finetune"].deadline
    assert Worker(home, "finetune", deadline=60).deadline_of(job) == 60
    given = queue.submit("finetune", {"deadline": 5})
    assert Worker(home, "finetune", deadline=60).deadline_of(given) == 5
    assert all(kind.deadline > 0 for kind in JOB_KINDS.values())
    with pytest.raises(ValueError, match="WorkerConfig.deadline: expected > 0, got 0"):
        Worker(home, "train", deadline=0)
