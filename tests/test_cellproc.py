"""A cell in a process of its own (compare/cellproc.py): its peak memory leaves out what the
parent holds, it sees the parent's directory, environment, threads and output, an error in it
is raised in the parent, and it does not outlive the parent's way out."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from snowfire.compare.cellproc import run_in_child
from snowfire.options import ThreadBudget

MB = 2**20


def measure(extra_mb: int) -> dict:
    """PeakMemory around `extra_mb` of fresh memory, in the calling process."""
    import torch

    from snowfire.rundir import PeakMemory

    with PeakMemory(torch.device("cpu")) as peak:
        block = np.ones(extra_mb * MB // 8)  # written: resident
        assert block.sum() == extra_mb * MB // 8
    return peak.record()


def piece(extra_mb: int, earlier: dict | None, resumed: bool) -> tuple[dict, dict]:
    """One piece of a run trained in pieces: (what its checkpoint keeps, its record)."""
    import torch

    from snowfire.rundir import PeakMemory

    with PeakMemory(torch.device("cpu"), earlier=earlier, resumed=resumed) as peak:
        block = np.ones(extra_mb * MB // 8)
        assert block.sum() > 0
        kept = peak.carried()
    return kept, peak.record()


def surroundings(text: str) -> dict:
    import torch

    from snowfire.options import threads_record

    print(text, flush=True)
    return {
        "cwd": os.getcwd(),
        "env": os.environ.get("SNOWFIRE_CELLPROC_TEST"),
        "threads": torch.get_num_threads(),
        "record": threads_record()["budget"],
        "pid": os.getpid(),
    }


def fail(message: str) -> None:
    raise ValueError(message)


class Odd(Exception):
    """An exception pickle cannot rebuild: its constructor wants two arguments."""

    def __init__(self, row: int, why: str) -> None:
        super().__init__(f"row {row}: {why}")


def fail_oddly() -> None:
    raise Odd(7, "no label")


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def linger(pid_file: str) -> None:
    Path(pid_file).write_text(str(os.getpid()))
    time.sleep(120)


def test_a_cells_peak_leaves_out_what_the_parent_holds():
    held = np.ones(400 * MB // 8)  # the parent's: an earlier cell's leftovers, say
    assert held.sum() > 0
    child = run_in_child(measure, 40)
    assert child["peak_rss_own"] is True
    here = measure(40)  # the same work in this process: its resident set counts `held`
    assert here["peak_rss_mb"] > child["peak_rss_mb"] + 300
    assert measure(1)["peak_rss_own"] is False  # a second measure in a process never is


def test_a_run_trained_in_pieces_records_its_highest_piece():
    first, alone = run_in_child(piece, 300, None, False)  # paused at a rung: its checkpoint
    assert first["peak_rss_mb"] <= alone["peak_rss_mb"] < first["peak_rss_mb"] + 5  # then: so far
    assert first["peak_rss_own"] is True and first["peak_rss_mb"] > 300
    _, then = run_in_child(piece, 10, first, True)  # resumed in another process
    assert then["peak_rss_mb"] == first["peak_rss_mb"]  # the first piece's was the higher
    assert then["peak_rss_own"] is True  # both pieces measured in processes of their own
    _, bigger = run_in_child(piece, 500, first, True)
    assert bigger["peak_rss_mb"] > first["peak_rss_mb"] + 150
    _, unknown = run_in_child(piece, 10, None, True)  # resumed, the earlier peak not kept
    assert unknown["peak_rss_own"] is False
    _, shared = run_in_child(piece, 10, {"peak_rss_mb": 1.0, "peak_rss_own": False}, True)
    assert shared["peak_rss_own"] is False


def test_a_cell_sees_the_parents_directory_environment_threads_and_output(
    tmp_path, monkeypatch, capfd
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SNOWFIRE_CELLPROC_TEST", "set after the fork server started, maybe")
    budget = ThreadBudget(threads=1, cores=2, affinity=2, quota=None, override="test=1")
    monkeypatch.setattr("snowfire.options.threads_in_use", lambda: budget)
    got = run_in_child(surroundings, "a line from the cell's process")
    assert got["pid"] != os.getpid()
    assert got["cwd"] == str(tmp_path)
    assert got["env"] == "set after the fork server started, maybe"
    assert got["threads"] == 1 and got["record"] == budget.to_json()
    assert "a line from the cell's process" in capfd.readouterr().out


def test_an_error_in_the_cell_is_raised_here_with_its_traceback():
    with pytest.raises(ValueError, match="bad row 3") as err:
        run_in_child(fail, "bad row 3")
    note = str(err.value.__cause__)  # the child's traceback, as the cause
    assert "in the cell's process" in note and "raise ValueError(message)" in note


def test_an_error_that_cannot_travel_arrives_in_words():
    with pytest.raises(RuntimeError, match="Odd: row 7: no label") as err:
        run_in_child(fail_oddly)
    assert "raise Odd(7" in str(err.value.__cause__)


def test_a_cell_killed_outright_is_an_error_that_says_how_it_ended():
    with pytest.raises(RuntimeError, match=r"ended without a result: exit code -9"):
        run_in_child(die)


def test_the_cell_does_not_outlive_the_parents_way_out(tmp_path):
    pid_file = tmp_path / "pid"

    def interrupt(signum, frame):  # ^C while the parent waits for the running cell
        if pid_file.is_file():
            raise KeyboardInterrupt("stop")

    before = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5, 0.5)
    try:
        with pytest.raises(KeyboardInterrupt, match="stop"):
            run_in_child(linger, str(pid_file))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError, match="No such process"):  # stopped and reaped
        os.kill(pid, 0)
