"""Run directories: one holder at a time (the lock dies with its process), files that appear
whole. A finished ❄️ run returned, a killed attempt cleared: tests/test_train.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from tasks.runs import RunBusyError, atomic_write_text, hold_run

HOLDER = """
import sys, time
from tasks.runs import hold_run
with hold_run(sys.argv[1]):
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.mark.subprocess
def test_a_held_run_refuses_a_second_holder_until_the_first_dies(tmp_path):
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(run)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "held"
        with pytest.raises(RunBusyError, match=rf"held by another process \(pid {proc.pid}\)"):
            with hold_run(run):
                pass
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # no clean-up code runs: the OS drops the lock
        proc.wait()
    with hold_run(run) as held:
        assert held == run


def test_atomic_write_leaves_the_whole_file_and_no_temp(tmp_path):
    path = tmp_path / "metrics.json"
    atomic_write_text(path, "old")
    atomic_write_text(path, json.dumps({"dev": 1}))
    assert json.loads(path.read_text()) == {"dev": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.json"]
