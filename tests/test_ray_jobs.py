"""Jobs on a local Ray through the REST API (`serve --home --ray`): extract and train jobs run
as Ray tasks with the same contract (status, log, metrics), cells of a sweep run at once and
equal sequential runs, a cancel kills the task, a failure is reported with its reason."""

from __future__ import annotations

import os
import time
from datetime import datetime

import pytest
from fastapi.testclient import TestClient

from snowfire.api import Settings, create_app

pytestmark = pytest.mark.subprocess  # Ray's processes


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray", reason="make test installs the 'ray' extra")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture
def client(ray_local, tmp_path, data_dir):
    (tmp_path / "tasks").symlink_to(data_dir)
    settings = Settings(home=tmp_path, ray="local", ray_slots=2)
    with TestClient(create_app(settings=settings)) as c:
        yield c


def _run(client, kind, params, timeout=240):
    r = client.post("/v1/jobs", json={"kind": kind, "params": params})
    assert r.status_code == 202, r.text
    return r.json()["id"]


def _wait(client, job_id, statuses=("done", "failed", "cancelled"), timeout=240):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"/v1/jobs/{job_id}?tail=50").json()
        if job["status"] in statuses:
            return job
        time.sleep(0.3)
    raise AssertionError(f"job {job_id} still {job['status']} after {timeout} s: {job['log']}")


def test_extract_then_a_sweep_of_train_jobs_on_ray(client, tiny_bert_dir, tmp_path):
    from snowfire.heads import TrainConfig, train

    enc = f"hf:{tiny_bert_dir}"
    job = _wait(client, _run(client, "extract", {"encoder": enc, "task": "sst2"}))
    assert job["status"] == "done", job
    assert any("on Ray node" in line for line in job["log"])
    cells = [
        {"encoder": enc, "task": "sst2", "head": head, "epochs": 3, "seed": 7}
        for head in ("linear", "mlp")
    ]
    ids = [_run(client, "train", cell) for cell in cells]
    jobs = [_wait(client, i) for i in ids]
    assert [j["status"] for j in jobs] == ["done", "done"], [j["error"] for j in jobs]
    span = [
        (
            datetime.fromisoformat(j["started_at"][:-1]),
            datetime.fromisoformat(j["finished_at"][:-1]),
        )
        for j in jobs
    ]
    assert span[0][0] < span[1][1] and span[1][0] < span[0][1]  # the two cells ran at once
    for cell, job in zip(cells, jobs, strict=True):  # equal to a sequential run, same seed
        params = {**job["params"], "out": str(tmp_path / f"seq-{cell['head']}"), "progress": False}
        assert train(TrainConfig(**params)) == job["metrics"]


def test_a_cancel_kills_the_ray_task(client, tiny_bert_dir):
    enc = f"hf:{tiny_bert_dir}"
    assert (
        _wait(client, _run(client, "extract", {"encoder": enc, "task": "sst2"}))["status"] == "done"
    )
    job_id = _run(
        client,
        "train",
        {"encoder": enc, "task": "sst2", "head": "bcn", "epochs": 500, "patience": 500},
    )
    deadline = time.monotonic() + 120
    pid = None
    while pid is None and time.monotonic() < deadline:
        for line in client.get(f"/v1/jobs/{job_id}?tail=50").json()["log"]:
            if "on Ray node" in line:
                pid = int(line.rsplit("pid ", 1)[1])
        time.sleep(0.2)
    assert pid is not None, "the task did not start"
    assert client.post(f"/v1/jobs/{job_id}/cancel").status_code in (200, 202)
    job = _wait(client, job_id)
    assert job["status"] == "cancelled"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"the task's process {pid} still runs after the cancel")


def test_a_failing_job_reports_why(client, tiny_bert_dir):
    # no extraction yet: the train job fails on the node, and says which features are missing
    job = _wait(
        client,
        _run(client, "train", {"encoder": f"hf:{tiny_bert_dir}", "task": "sst2", "head": "linear"}),
    )
    assert job["status"] == "failed"
    assert "FeatureSetNotFoundError" in job["error"] and "sst2" in job["error"], job["error"]


def test_compare_runs_its_cells_on_ray_with_the_sequential_results(
    ray_local, tiny_bert_dir, tmp_path
):
    from snowfire.cli.main import main as snowfire
    from snowfire.tasks import DEMO_DATA_DIR

    base = [
        "compare",
        "--encoder",
        f"hf:{tiny_bert_dir}",
        "--tasks",
        "sst2",
        "--data",
        str(DEMO_DATA_DIR),
        "--heads",
        "linear",
        "--quiet",
    ]
    store = str(tmp_path / "store")  # extracted once, read by both
    assert snowfire(base + ["--out", str(tmp_path / "seq"), "--store", store]) == 0
    assert (
        snowfire(base + ["--out", str(tmp_path / "ray"), "--store", store, "--ray", "local"]) == 0
    )
    import json

    seq, par = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("seq", "ray"))
    assert len(seq["cells"]) == 2  # linear, fine-tuning
    for a, b in zip(seq["cells"], par["cells"], strict=True):
        assert (a["mode"], a["head"], a["seed"]) == (b["mode"], b["head"], b["seed"])
        assert a["metrics"] == b["metrics"], (a["mode"], a["head"])
    race = seq["tasks"]["sst2"]["race"]  # raced by default: the same decisions on Ray
    assert race["decisions"] and par["tasks"]["sst2"]["race"] == race
