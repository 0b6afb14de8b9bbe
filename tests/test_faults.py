"""Faults, injected: a worker, a runner and the API killed with -9, many clients and workers
at once, readers beside a writer, a full disk. Each test asserts nothing is lost and nothing
runs or is stored twice. (Marked `subprocess`: `make test` runs them, `make test-fast` not.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from snowfire.jobs import Home, JobQueue, free_port
from tests.helpers import snowfire_cli, tree_bytes
from tests.helpers.tasks import write_sst2

pytestmark = pytest.mark.subprocess
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).parents[1])}


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def _runners(job_id: str) -> list[int]:
    """Live processes running `jobs.runner` for `job_id` (read from /proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().split(") ")[1].split()[0]
        except OSError:
            continue
        if b"snowfire.jobs.runner" in argv and job_id.encode() in argv and state != "Z":
            pids.append(int(entry.name))
    return pids


def _worker(home: Path, kind: str, lease: float) -> subprocess.Popen:
    argv = snowfire_cli(
        "worker", "--kind", kind, "--home", str(home), "--lease", str(lease), "--poll", "0.2"
    )
    return subprocess.Popen(argv, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_a_worker_killed_mid_job_leaves_no_runner_and_the_job_runs_once_more(
    tiny_bert_dir, tmp_path
):
    home = Home(tmp_path / "home")
    write_sst2(home.root / "tasks", sizes=(("train", 1200), ("dev", 40)))
    queue = JobQueue(home.queue)
    params = {
        "encoder": f"hf:{tiny_bert_dir}",
        "task": "sst2",
        "epochs": 2,
        "batch_size": 4,
        "lr": 1e-3,
        "checkpoint_every": 20,
        "progress": False,
    }
    from snowfire.jobs import validate_params

    job = queue.submit("finetune", validate_params("finetune", params, home, "j1"), "j1")
    first = _worker(home.root, "finetune", lease=4.0)
    try:
        runner = _wait(lambda: _runners(job.id), 60, "the first runner")[0]
        run = Path(queue.get(job.id).params["out"])
        _wait(lambda: (run / "checkpoint.pt").exists(), 120, "a checkpoint of the first attempt")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    # the runner dies with its worker (parent-death signal / its own watch), at once
    _wait(lambda: not _runners(job.id), 10, f"runner {runner} to die with its worker")
    assert queue.get(job.id).status == "running"  # until the lease expires
    second = _worker(home.root, "finetune", lease=4.0)
    try:
        seen: set[int] = set()

        def done():
            alive = _runners(job.id)
            assert len(alive) <= 1, f"two runners at once: {alive}"
            seen.update(alive)
            return queue.get(job.id).status in ("done", "failed")

        _wait(done, 240, "the job to finish on the second worker")
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(30)
    final = queue.get(job.id)
    assert final.status == "done", final.error
    assert final.attempts == 2 and runner not in seen
    assert final.metrics == json.loads((run / "metrics.json").read_text())
    assert not (run / "checkpoint.pt").exists()
    log = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in log] == [1, 2]  # resumed, no epoch twice


def test_a_runner_killed_mid_write_is_run_again_and_completes(tiny_bert_dir, tmp_path):
    home = Home(tmp_path / "home")
    write_sst2(home.root / "tasks", sizes=(("train", 800), ("dev", 40)))
    queue = JobQueue(home.queue)
    params = {
        "encoder": f"hf:{tiny_bert_dir}",
        "task": "sst2",
        "epochs": 2,
        "batch_size": 4,
        "lr": 1e-3,
        "checkpoint_every": 20,
        "progress": False,
    }
    from snowfire.jobs import validate_params

    job = queue.submit("finetune", validate_params("finetune", params, home, "j2"), "j2")
    run = Path(queue.get(job.id).params["out"])
    worker = _worker(home.root, "finetune", lease=30.0)
    try:
        runner = _wait(lambda: _runners(job.id), 60, "the runner")[0]
        _wait(lambda: (run / "checkpoint.pt").exists(), 120, "a checkpoint")
        os.kill(runner, signal.SIGKILL)  # as the OOM killer would, mid-run
        _wait(lambda: queue.get(job.id).status in ("done", "failed"), 240, "the retried job")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(30)
    final = queue.get(job.id)
    assert final.status == "done" and final.attempts == 2, (final.status, final.error)
    assert final.metrics == json.loads((run / "metrics.json").read_text())
    log = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in log] == [1, 2]


def _serve(home: Path, port: int) -> subprocess.Popen:
    argv = snowfire_cli("serve", "--home", str(home), "--port", str(port))
    proc = subprocess.Popen(argv, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait(lambda: _up(port), 60, "the API to answer")
    return proc


def _up(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


TRAIN = {"encoder": "minilm", "task": "sst2", "head": "linear"}


def test_the_api_killed_during_submissions_loses_and_duplicates_nothing(tmp_path):
    home = tmp_path / "home"
    write_sst2(home / "tasks")
    port = free_port()
    api = _serve(home, port)
    acked: dict[str, str] = {}  # idempotency key -> job id the client got a 202 for
    pending = [f"key-{i}" for i in range(120)]
    killed, restarts = False, 0
    try:
        while pending:
            key = pending[0]
            try:
                r = httpx.post(
                    f"http://127.0.0.1:{port}/v1/jobs",
                    timeout=5,
                    json={"kind": "train", "params": TRAIN},
                    headers={"Idempotency-Key": key},
                )
            except httpx.HTTPError:
                api.wait()  # the client saw no answer: after a restart it retries the same key
                api, restarts = _serve(home, port), restarts + 1
                continue
            assert r.status_code == 202, r.text
            assert acked.setdefault(key, r.json()["id"]) == r.json()["id"]
            pending.pop(0)
            if len(acked) == 40 and not killed:  # mid-stream, another request in flight
                threading.Timer(0.05, api.send_signal, (signal.SIGKILL,)).start()
                killed = True
    finally:
        api.send_signal(signal.SIGKILL)
        api.wait()
    assert restarts == 1
    jobs = JobQueue(home / "queue.sqlite").list(limit=1000)
    assert sorted(j.idempotency_key for j in jobs) == sorted(acked)  # none lost, none twice
    assert {j.idempotency_key: j.id for j in jobs} == acked


def test_sixteen_clients_and_three_claimers_lose_and_repeat_nothing(tmp_path):
    home = tmp_path / "home"
    write_sst2(home / "tasks")
    port = free_port()
    api = _serve(home, port)
    claimer = """
import json, os, sys, time
from snowfire.jobs import JobQueue
q, mine, idle = JobQueue(sys.argv[1]), [], 0
while not (os.path.exists(sys.argv[3]) and idle >= 10):  # until submissions end and it drains
    job = q.claim("train", worker=sys.argv[2], lease=30)
    if job is None:
        idle += 1; time.sleep(0.05); continue
    idle = 0; mine.append(job.id)
    assert q.finish(job.id, job.lease, "done", {"by": sys.argv[2]})
print(json.dumps(mine))
"""
    submitted = tmp_path / "all-submitted"  # claimers stop once it exists and nothing is left
    claimers = [
        subprocess.Popen(
            [sys.executable, "-c", claimer, str(home / "queue.sqlite"), f"w{i}", str(submitted)],
            env=ENV,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(3)
    ]
    ids: list[str] = []
    lock = threading.Lock()

    def client(n: int) -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
            for _ in range(n):
                r = c.post("/v1/jobs", json={"kind": "train", "params": TRAIN})
                assert r.status_code == 202, r.text
                with lock:
                    ids.append(r.json()["id"])

    try:
        threads = [threading.Thread(target=client, args=(13 if i < 8 else 12,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        submitted.touch()
        claimed = [job for p in claimers for job in json.loads(p.communicate(timeout=120)[0])]
    finally:
        api.send_signal(signal.SIGKILL)
        api.wait()
    assert len(ids) == 200 and len(set(ids)) == 200
    assert sorted(claimed) == sorted(ids)  # every job claimed, none twice
    queue = JobQueue(home / "queue.sqlite")
    assert {j.status for j in queue.list(limit=1000)} == {"done"}


def _extract_argv(model: Path, inp: Path, store: Path) -> list[str]:
    return snowfire_cli(
        "extract",
        "--encoder",
        f"hf:{model}",
        "--input",
        str(inp),
        "--store",
        str(store),
        "--segment-tokens",
        "96",
        "--token-budget",
        "256",
        "--quiet",
    )


def _sentences(n: int, tag: str) -> str:
    base = "the man plays guitar in the park and a dog runs over the street".split() * 3
    return "\n".join(" ".join(base[: 3 + i % 30] + [tag, str(i)]) for i in range(n)) + "\n"


def test_eight_readers_beside_an_extraction_see_whole_sets_only(tiny_bert_dir, tmp_path):
    from snowfire.cache import Store

    store = tmp_path / "store"
    (tmp_path / "a.txt").write_text(_sentences(40, "first"))
    (tmp_path / "b.txt").write_text(_sentences(300, "second"))
    subprocess.run(_extract_argv(tiny_bert_dir, tmp_path / "a.txt", store), check=True, env=ENV)
    (first,) = Store(store).list_featuresets()
    expected = Store(store).read(first.id, indices=list(range(first.num_examples)))
    writer = subprocess.Popen(_extract_argv(tiny_bert_dir, tmp_path / "b.txt", store), env=ENV)
    errors: list[str] = []
    seen_absent, seen_whole, reads = [0], [0], [0]

    def reader(i: int) -> None:
        while writer.poll() is None:
            try:
                s = Store(store)
                sets = {fs.id: fs for fs in s.list_featuresets()}
                got = s.read(first.id, indices=list(range(first.num_examples)))
                if (
                    not (got.offsets == expected.offsets).all()
                    or not (got.features == expected.features).all()
                ):
                    errors.append(f"reader {i}: the first set read back different numbers")
                new = [fs for fs in sets.values() if fs.id != first.id]
                if not new:
                    seen_absent[0] += 1
                for fs in new:
                    batch = s.read(fs.id, indices=list(range(fs.num_examples)))
                    if fs.num_examples != 300 or len(batch.offsets) != 301:
                        errors.append(f"reader {i}: a partial set {fs.id}: {fs.num_examples}")
                    seen_whole[0] += 1
                reads[0] += 1
            except Exception as err:  # noqa: BLE001  (any error is the failure counted)
                errors.append(f"reader {i}: {type(err).__name__}: {err}")

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    writer.wait(300)
    for t in threads:
        t.join()
    assert writer.returncode == 0
    assert errors == [], errors[:5]
    assert seen_absent[0] > 0 and reads[0] > 8  # the readers did overlap the writer
    assert len(Store(store).list_featuresets()) == 2


def _mount_tmpfs(path: Path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
    )
    return done.returncode == 0


def test_a_full_disk_during_extraction_keeps_the_store_and_the_rerun_is_identical(
    tiny_bert_dir, tmp_path
):
    from snowfire.cache import Store

    (tmp_path / "a.txt").write_text(_sentences(20, "first"))
    (tmp_path / "b.txt").write_text(_sentences(300, "second"))
    reference = tmp_path / "reference"
    for name in ("a.txt", "b.txt"):
        subprocess.run(
            _extract_argv(tiny_bert_dir, tmp_path / name, reference), check=True, env=ENV
        )
    need = sum(p.stat().st_size for p in reference.rglob("*") if p.is_file())
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, str(need // 2)):
        pytest.skip("cannot mount a tmpfs here (needs root): no small disk to fill")
    try:
        store = disk / "store"
        subprocess.run(_extract_argv(tiny_bert_dir, tmp_path / "a.txt", store), check=True, env=ENV)
        before = tree_bytes(store)
        failed = subprocess.run(
            _extract_argv(tiny_bert_dir, tmp_path / "b.txt", store),
            env=ENV,
            capture_output=True,
            text=True,
        )
        assert failed.returncode != 0, "the disk did not fill up"
        assert "No space left on device" in failed.stderr, failed.stderr[-2000:]
        (first,) = Store(store).list_featuresets()  # readable; the unfinished set not listed
        assert Store(store).read(first.id, indices=[0, 1]).offsets.shape == (3,)
        after = tree_bytes(store)
        assert {k: v for k, v in after.items() if k in before} == before  # nothing stored lost
        subprocess.run(["mount", "-o", f"remount,size={need * 4}", str(disk)], check=True)
        subprocess.run(_extract_argv(tiny_bert_dir, tmp_path / "b.txt", store), check=True, env=ENV)
        # byte-identical to a run that never failed
        assert tree_bytes(store) == tree_bytes(reference)
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
