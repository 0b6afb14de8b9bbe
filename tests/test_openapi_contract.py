"""The OpenAPI document tells the truth: schemathesis (every check, all four phases with the
stateful links, a fixed seed and a bounded budget) against a live service with a real home —
a feature set, task data, jobs, an API key, an embed encoder — finds no failure."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import free_port, wait_healthy

pytestmark = pytest.mark.subprocess

KEY = "contract-test-write-key-0001"
CONFIG = Path(__file__).with_name("schemathesis.toml")


def _schemathesis() -> str:
    found = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("schemathesis is not installed: pip install -e '.[dev]' (make test does)")
    return found


def test_the_service_keeps_its_openapi_contract(tiny_bert_dir, tmp_path):
    from extractor import ExtractConfig, run_extract
    from jobs import python_command
    from tests.helpers.tasks import write_sst2

    write_sst2(tmp_path / "tasks")
    texts = tmp_path / "texts.txt"
    texts.write_text("the dog runs\na man plays the guitar\nsomeone eats food\n")
    run_extract(ExtractConfig(encoder=f"hf:{tiny_bert_dir}", input=str(texts),
                              store=str(tmp_path / "store"), progress=False))  # fmt: skip
    port = free_port()
    env = {**os.environ, "SNOWFIRE_API_KEYS": f"{KEY}:write", "SNOWFIRE_LOG_LEVEL": "warning"}
    service = subprocess.Popen(
        python_command(
            "cli",
            "serve",
            "--home",
            str(tmp_path),
            "--port",
            str(port),
            "--encoder",
            f"hf:{tiny_bert_dir}",
        ),  # fmt: skip
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", service)
        run = subprocess.run(
            [_schemathesis(), "--config-file", str(CONFIG), "run",
             f"http://127.0.0.1:{port}/openapi.json", "--checks", "all", "--seed", "7",
             "--max-examples", "15", "--phases", "examples,coverage,fuzzing,stateful",
             "-H", f"Authorization: Bearer {KEY}", "--no-color", "--suppress-health-check", "all"],
            env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path,
        )  # fmt: skip
    finally:
        service.terminate()
        service.wait(timeout=30)
    report = run.stdout[-6000:] + run.stderr[-2000:]
    assert run.returncode == 0, report
    assert "Tested: 14" in run.stdout or "Tested:" in run.stdout, report
