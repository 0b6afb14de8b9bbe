"""experiments/ledger.py: every invocation's wall and CPU time, summed for the page, whether it
finished, was interrupted, or was killed before it could say."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"
sys.path.insert(0, str(EXPERIMENTS))


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_finished_and_interrupted_invocations_are_summed(tmp_path):
    import ledger

    with ledger.invocation(tmp_path, ["--tasks", "stsb"]):
        _burn(0.3)
    with (
        pytest.raises(RuntimeError, match="cut short"),
        ledger.invocation(tmp_path, ["--tasks", "mrpc"]),
    ):
        time.sleep(0.2)
        raise RuntimeError("cut short")  # an error, or ^C: the end is written all the same
    lines = [json.loads(x) for x in (tmp_path / ledger.LEDGER).read_text().splitlines()]
    assert all("others_cpu_s" in r for r in lines if r["event"] == "end")  # Linux: /proc/stat
    assert [(r["event"], r.get("status")) for r in lines] == [
        ("start", None),
        ("end", "finished"),
        ("start", None),
        ("end", "interrupted"),
    ]
    assert lines[0]["argv"] == ["--tasks", "stsb"] and "CPU cores" in lines[0]["machine"]
    first, second = lines[1], lines[3]
    assert first["cpu_s"] >= 0.25 and first["wall_s"] >= 0.25  # the burn, measured
    assert second["wall_s"] >= 0.15 and second["cpu_s"] < 0.15  # a sleep costs no CPU
    got = ledger.total(tmp_path)
    assert got.invocations == 2 and got.unrecorded == 0
    assert got.wall_s == pytest.approx(first["wall_s"] + second["wall_s"])
    assert got.cpu_s == pytest.approx(first["cpu_s"] + second["cpu_s"])
    assert got.sentence().startswith("Its cost over 2 invocation(s): ")
    assert got.others_cpu_s == pytest.approx(first["others_cpu_s"] + second["others_cpu_s"])
    assert "Other processes used " in got.sentence()


def test_the_machines_are_one_list_before_what_befell_the_invocations():
    import ledger

    two = ledger.Total(3, 7200, 7200, 0, ("AMD EPYC, 2 CPU cores", "Intel Xeon, 2 CPU cores"), 1)
    assert two.sentence() == (
        "Its cost over 3 invocation(s): 2.00 h of wall time, 2.00 CPU-hours, on AMD EPYC, "
        "2 CPU cores and Intel Xeon, 2 CPU cores; 1 of them killed outright, counted up to "
        f"their last record (at most {ledger.BEAT:.0f} s each not counted)."
    )


@pytest.mark.subprocess
def test_a_polite_kill_is_recorded_and_a_hard_kill_is_counted_apart(tmp_path):
    import ledger

    def script(beat: float) -> str:
        return (
            f"import sys, time; sys.path.insert(0, {str(EXPERIMENTS)!r}); import ledger\n"
            f"p = __import__('pathlib').Path({str(tmp_path)!r})\n"
            f"with ledger.invocation(p, ['x'], beat={beat}):\n"
            "    print('in', flush=True); time.sleep(60)\n"
        )

    # SIGTERM; SIGKILL before the first beat; SIGKILL after beats (0.2 s apart)
    for sig, beat, wait in (
        (signal.SIGTERM, 60, 0),
        (signal.SIGKILL, 60, 0),
        (signal.SIGKILL, 0.2, 1.0),
    ):
        proc = subprocess.Popen([sys.executable, "-c", script(beat)], stdout=subprocess.PIPE)
        assert proc.stdout is not None and proc.stdout.readline() == b"in\n"
        time.sleep(wait)
        os.kill(proc.pid, sig)
        proc.wait(timeout=30)
    got = ledger.total(tmp_path)
    # SIGTERM wrote its end; the beaten SIGKILL counts to its last beat; the other is apart
    assert got.invocations == 2 and got.killed == 1 and got.unrecorded == 1
    lines = [json.loads(x) for x in (tmp_path / ledger.LEDGER).read_text().splitlines()]
    last_beat = [r for r in lines if r["event"] == "beat"][-1]
    assert 0.6 <= last_beat["wall_s"] <= got.wall_s  # the beats kept counting while it slept
    assert "1 of them killed outright, counted up to their last record" in got.sentence()
    assert "1 more were killed before recording their time (not counted)" in got.sentence()


def test_a_cut_line_is_an_error_naming_the_file_and_line(tmp_path):
    import ledger

    with ledger.invocation(tmp_path, []):
        pass
    with (tmp_path / ledger.LEDGER).open("a") as f:
        f.write('{"id": "ab", "event": "sta\n')
    with pytest.raises(ValueError, match=r"ledger\.jsonl:3: expected a JSON ledger record"):
        ledger.total(tmp_path)
    assert ledger.total(tmp_path / "none").sentence().startswith("No invocation")


@pytest.mark.subprocess
def test_the_clock_counts_descendants_nobody_has_waited_for(tmp_path):
    """compare's cells run in a fork server's children, which the invocation never waits for:
    a grandchild burning CPU counts as the invocation's while it runs, not as others' load."""
    import ledger

    done = tmp_path / "burnt"
    burn = (  # 1.5 s of CPU, then say so and stay alive
        "import pathlib, sys, time\nend = time.process_time() + 1.5\n"
        "while time.process_time() < end: pass\n"
        "pathlib.Path(sys.argv[1]).write_text('1')\ntime.sleep(30)\n"
    )
    middle = (  # starts the burner and lets it run on without waiting for it
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', {burn!r}, {str(done)!r}])\n"
        "time.sleep(30)\n"
    )
    before = ledger._cpu_seconds()
    proc = subprocess.Popen([sys.executable, "-c", middle], start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not done.is_file() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert done.is_file(), "the grandchild never finished burning"
        assert ledger._cpu_seconds() - before >= 1.4
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the middle process and the burner
        proc.wait()
