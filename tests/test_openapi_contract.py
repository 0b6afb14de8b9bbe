"""The OpenAPI document tells the truth: schemathesis (every check, all four phases with the
stateful links, seed 1 and a bounded budget) against a live service with a real home — task
data, a feature set of texts and those of a task, finished jobs (done, failed, cancelled), an
API key of each scope, an embed encoder — finds no failure, with the read key and with the
write key."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from snowfire.jobs import free_port, stop_process, wait_healthy
from tests.helpers import snowfire_cli

pytestmark = pytest.mark.subprocess

KEYS = {"read": "contract-test-read-key-00001", "write": "contract-test-write-key-0001"}
CONFIG = Path(__file__).with_name("schemathesis.toml")


def _schemathesis() -> str:
    found = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("schemathesis is not installed: pip install -e '.[dev]' (make test does)")
    return found


def finished_jobs(home: Path, encoder: str) -> dict[str, str]:
    """An extract job and a train job run to the end by real workers, a train job that fails
    (no features of its encoder) and one cancelled: {status: job id}."""
    from fastapi.testclient import TestClient

    from snowfire.api import Settings, create_app
    from snowfire.jobs import Home
    from snowfire.jobs.worker import Worker

    ids = {}
    with TestClient(create_app(settings=Settings(home=home))) as client:

        def submit(kind: str, **params) -> str:
            r = client.post(
                "/v1/jobs", json={"kind": kind, "params": {"progress": False, **params}}
            )
            assert r.status_code == 202, r.text
            return r.json()["id"]

        train = {"task": "sst2", "head": "linear", "epochs": 1}
        done = [submit("extract", encoder=encoder, task="sst2")]
        for kind in ("extract", "train"):
            if kind == "train":
                done.append(submit("train", encoder=encoder, **train))
            assert Worker(Home(home.resolve()), kind, poll=0.2).run(once=True) == 1
        ids["failed"] = submit("train", encoder="minilm", **train)
        assert Worker(Home(home.resolve()), "train", poll=0.2).run(once=True) == 1
        ids["cancelled"] = submit("train", encoder=encoder, **train)
        assert client.post(f"/v1/jobs/{ids['cancelled']}/cancel").status_code == 200
        ids["done"] = done[-1]
        for status, job_id in [*ids.items(), ("done", done[0])]:
            job = client.get(f"/v1/jobs/{job_id}").json()
            assert job["status"] == status, job
    return ids


def test_the_service_keeps_its_openapi_contract(tiny_bert_dir, tmp_path):
    from snowfire.extractor import ExtractConfig, run_extract
    from tests.helpers.tasks import write_sst2

    write_sst2(tmp_path / "tasks")
    texts = tmp_path / "texts.txt"
    texts.write_text("the dog runs\na man plays the guitar\nsomeone eats food\n")
    run_extract(
        ExtractConfig(
            encoder=f"hf:{tiny_bert_dir}",
            input=str(texts),
            store=str(tmp_path / "store"),
            progress=False,
        )
    )
    finished_jobs(tmp_path, f"hf:{tiny_bert_dir}")
    port = free_port()
    keys = f"{KEYS['read']},{KEYS['write']}:write"
    env = {**os.environ, "SNOWFIRE_API_KEYS": keys, "SNOWFIRE_LOG_LEVEL": "warning"}
    service = subprocess.Popen(
        snowfire_cli(
            "serve",
            "--home",
            str(tmp_path),
            "--port",
            str(port),
            "--encoder",
            f"hf:{tiny_bert_dir}",
        ),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    runs = {}
    try:
        wait_healthy(f"http://127.0.0.1:{port}", service)
        for scope, key in KEYS.items():
            runs[scope] = subprocess.run(
                [
                    _schemathesis(),
                    "--config-file",
                    str(CONFIG),
                    "run",
                    f"http://127.0.0.1:{port}/openapi.json",
                    "--checks",
                    "all",
                    "--seed",
                    "1",
                    "--max-examples",
                    "15",
                    "--phases",
                    "examples,coverage,fuzzing,stateful",
                    "-H",
                    f"Authorization: Bearer {key}",
                    "--no-color",
                    "--suppress-health-check",
                    "all",
                ],
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
                cwd=tmp_path,
            )
    finally:
        stop_process(service, grace=30)
    for scope, run in runs.items():
        report = f"{scope} key:\n" + run.stdout[-6000:] + run.stderr[-2000:]
        assert run.returncode == 0, report
        counts = re.search(r"Test cases:\s+(\d+) generated, (\d+) passed\s", run.stdout)
        assert counts and counts[1] == counts[2] and int(counts[1]) > 500, report
        selected = re.search(r"Selected: (\d+)/(\d+)", run.stdout)
        assert selected and selected[1] == selected[2] and int(selected[2]) >= 15, report
        assert f"Tested: {selected[2]}\n" in run.stdout, report  # every operation
        print(report)  # the outcome, for the record (pytest -s)
