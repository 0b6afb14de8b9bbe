"""`snowfire up`: the API and one worker per kind as local processes; Ctrl-C stops them all."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from snowfire.jobs import JOB_KINDS as KINDS
from snowfire.jobs import JobQueue, free_port
from tests.helpers.compose import LOCAL_ENV, SNOWFIRE

pytestmark = pytest.mark.subprocess  # starts and kills real processes


def _processes_mentioning(text: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and text in (proc / "cmdline").read_text():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def test_up_serves_runs_workers_and_stops_on_ctrl_c(tmp_path):
    home, port = tmp_path / "home", free_port()
    up = subprocess.Popen(
        [str(SNOWFIRE), "up", "--home", str(home), "--port", str(port)],
        env={**os.environ, **LOCAL_ENV},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert up.poll() is None, up.stdout.read().decode()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/jobs", timeout=5) as r:
                    assert json.loads(r.read()) == []
                break
            except OSError:
                assert time.monotonic() < deadline, "the API did not come up"
                time.sleep(0.3)
        queue = JobQueue(home / "queue.sqlite")
        while not all(queue.worker_alive(kind, within=30) for kind in KINDS):
            assert time.monotonic() < deadline, "not every worker started"
            time.sleep(0.3)
        assert len(_processes_mentioning(str(home))) == 2 + len(KINDS)  # up, the api, workers
    finally:
        up.send_signal(signal.SIGINT)
        code = up.wait(timeout=60)
    out = up.stdout.read().decode()
    assert code == 0, out
    assert "Application shutdown complete" in out
    assert out.count("stopped") == len(KINDS)
    assert _processes_mentioning(str(home)) == []
