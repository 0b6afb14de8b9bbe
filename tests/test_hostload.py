"""Whether other work shared a run's cores (snowfire.rundir.HostLoad, compare/hostload.py):
/proc/stat read by hand on constructed files, a real burning process seen from outside, and
the comparison's ledger of attempts summarised."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from snowfire.compare import Cell
from snowfire.compare.cell import Mode
from snowfire.compare.hostload import record_attempt, shared_cores, shared_text
from snowfire.rundir import SHARED, HostLoad, busy_seconds

STAT = """cpu  900 0 900 9000 0 0 0 0 0 0
cpu0 100 10 200 5000 40 5 6 7 300 0
cpu1 400 0 100 4000 0 0 0 0 0 0
intr 12345
"""


def test_busy_counts_user_nice_system_irq_softirq_steal_of_the_cpus_asked(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text(STAT)
    tick = os.sysconf("SC_CLK_TCK")
    # cpu0: 100 + 10 + 200 + 5 + 6 + 7 (idle 5000 and iowait 40 are not busy; guest 300 is in
    # user already); cpu1: 400 + 100; the aggregate "cpu" line is not counted twice
    assert busy_seconds({0}, stat) == pytest.approx(328 / tick)
    assert busy_seconds({1}, stat) == pytest.approx(500 / tick)
    assert busy_seconds(None, stat) == pytest.approx(828 / tick)
    assert busy_seconds({0}, tmp_path / "absent") is None


def test_the_others_are_the_cores_busy_time_less_this_process(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    stat.write_text(STAT)
    tick = os.sysconf("SC_CLK_TCK")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    with HostLoad(stat) as load:
        # both cores busy 1.5 s more: user +100 ticks/s ... as if another process ran
        stat.write_text(STAT.replace("cpu1 400", f"cpu1 {400 + int(1.5 * tick)}"))
    record = load.record()
    assert record["cores"] == 2
    assert record["others_cpu_seconds"] == pytest.approx(1.5, abs=0.05)  # less our own CPU
    assert record["shared"] and record["others_share"] > SHARED
    assert HostLoad(tmp_path / "absent").__enter__().record() == {}  # the OS does not say


@pytest.mark.subprocess
@pytest.mark.skipif(not os.path.isfile("/proc/stat"), reason="Linux /proc/stat")
def test_a_process_burning_beside_this_one_is_seen():
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass"
    with HostLoad() as load:
        subprocess.run([sys.executable, "-c", burn], check=True)
        time.sleep(0.05)
    record = load.record()
    assert record["others_cpu_seconds"] >= 0.4  # the child's 0.6 s, less the ticks' rounding
    assert record["cpu_seconds"] < 0.4  # this process waited
    # of the cores' time, at most all of it: /proc/stat counts in ticks of 10 ms per core, so
    # a busy second can read a few ticks over (1.001 once, beside the CI's load)
    assert record["shared"] and SHARED < record["others_share"] <= 1.05


def _cell(run: str) -> Cell:
    return Cell(Mode.FIRE, "sst2", None, 0, run)


def test_the_ledger_names_the_runs_that_shared_and_those_never_recorded(tmp_path):
    quiet = {"cores": 2, "wall_seconds": 100.0, "cpu_seconds": 190.0}
    record_attempt(
        tmp_path,
        _cell("a"),
        quiet | {"others_cpu_seconds": 2.0, "others_share": 0.01, "shared": False},
    )
    record_attempt(
        tmp_path,
        _cell("a"),
        quiet | {"others_cpu_seconds": 60.0, "others_share": 0.3, "shared": True},
    )
    record_attempt(
        tmp_path,
        _cell("b"),
        quiet | {"others_cpu_seconds": 40.0, "others_share": 0.2, "shared": True},
    )
    record_attempt(tmp_path, _cell("c"), {})  # the OS did not say: no line
    lines = (tmp_path / "load.jsonl").read_text().splitlines()
    assert [json.loads(line)["run"] for line in lines] == ["a", "a", "b"]
    got = shared_cores(tmp_path, [_cell("a"), _cell("c")])  # b is another task's
    assert got == {
        "attempts": 2,
        "shared_attempts": 1,
        "shared_runs": {"a": 0.3},
        "others_cpu_hours": round(62.0 / 3600, 3),
        "not_recorded": ["c"],
    }
    assert (
        shared_text(got)
        == "1 of 2 attempts shared their cores (others used up to 30% of them); 1 runs not recorded"
    )
    assert shared_text(shared_cores(tmp_path, [_cell("b")])).startswith("1 of 1 attempts")
    assert shared_text(shared_cores(tmp_path / "none", [_cell("a")])) == (
        "whether other work shared the cores: not recorded"
    )
