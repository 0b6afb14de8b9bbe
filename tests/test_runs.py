"""Run directories (the `rundir` package): one holder at a time (the lock dies with its process),
files that appear whole, a finished run of the same config reused and one of another config
refused, with the fields that may change between attempts marked on the configs themselves.
A finished ❄️ run returned and a killed attempt cleared: tests/test_train.py; 🔥 resumption:
tests/test_finetune_resume.py; a grid: tests/test_finetune_grid.py."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from snowfire.options import volatile_fields
from snowfire.rundir import (
    CONFIG,
    METRICS,
    RunBusyError,
    RunConfigError,
    check_same_config,
    config_changes,
    finished_or_refuse,
    hold_run,
    save_torch,
    write_json,
    write_lines,
)

HOLDER = """
import sys, time
from snowfire.rundir import hold_run
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


def test_a_second_holder_is_refused_naming_the_first_and_the_lock_is_dropped_after(tmp_path):
    run = tmp_path / "run"
    with hold_run(run):
        with pytest.raises(
            RunBusyError,
            match=rf"{run} is held by another process "
            rf"\(pid {os.getpid()}\)",
        ):
            with hold_run(run):
                pass
    with hold_run(run) as held:  # released at the end of the block
        assert held == run


def test_holding_a_run_removes_what_a_killed_writer_left(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / ".tmp-metrics.json-4242").write_text('{"dev": ')  # a writer killed mid-write
    (run / METRICS).write_text("{}")
    with hold_run(run):
        assert sorted(p.name for p in run.iterdir()) == [".lock", METRICS]


def test_run_files_are_written_whole(tmp_path):
    import torch

    write_json(tmp_path / METRICS, {"dev": {"pearson": np.float32(0.5)}, "path": tmp_path})
    assert json.loads((tmp_path / METRICS).read_text()) == {
        "dev": {"pearson": 0.5},
        "path": str(tmp_path),
    }
    write_lines(tmp_path / "log.jsonl", [{"epoch": 1}, {"epoch": 2}])
    write_lines(tmp_path / "log.jsonl", [{"epoch": 1}])  # the whole log, rewritten
    assert (tmp_path / "log.jsonl").read_text() == '{"epoch": 1}\n'
    save_torch(tmp_path / "best.pt", {"w": torch.arange(3.0)})
    assert torch.equal(torch.load(tmp_path / "best.pt", weights_only=True)["w"], torch.arange(3.0))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.pt", "log.jsonl", METRICS]


def test_a_torch_save_that_fails_keeps_the_previous_checkpoint(tmp_path):
    import torch

    save_torch(tmp_path / "checkpoint.pt", {"step": torch.tensor(4)})
    # a local lambda: AttributeError up to Python 3.11, PicklingError from 3.12
    with pytest.raises((AttributeError, pickle.PicklingError), match="Can't pickle"):
        save_torch(tmp_path / "checkpoint.pt", {"step": torch.tensor(6), "bad": lambda: 0})
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=True)["step"] == 4
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint.pt"]


# -- a finished run of the same config reused, another refused


def _head_config(out: Path, **kw):
    from snowfire.heads import TrainConfig

    return TrainConfig(
        store="store", encoder="minilm", task="sst2", head="linear", data="data", out=str(out), **kw
    )


def _finish(run: Path, section: str, cfg, metrics) -> None:
    """A finished run directory as the trainers leave it."""
    run.mkdir(parents=True, exist_ok=True)
    write_json(run / CONFIG, {section: cfg.to_json(), "seconds": 1.0})
    write_json(run / METRICS, metrics)


def test_a_finished_run_of_the_same_config_is_reused(tmp_path):
    run, metrics = tmp_path / "run", {"dev": {"accuracy": 0.75}}
    cfg = _head_config(run, hparams={"dropout": 0.1})
    assert finished_or_refuse(run, cfg, "train") is None  # nothing there yet
    _finish(run, "train", cfg, metrics)
    assert finished_or_refuse(run, cfg, "train") == metrics


def test_a_finished_run_is_reused_when_only_volatile_fields_changed(tmp_path):
    run, metrics = tmp_path / "run", {"dev": {"accuracy": 0.75}}
    _finish(run, "train", _head_config(run), metrics)
    moved = _head_config(tmp_path / "elsewhere", device="cpu", progress=False, max_memory_gb=0.5)
    assert finished_or_refuse(run, moved, "train") == metrics


def test_a_finished_run_of_another_config_is_refused_naming_each_field(tmp_path):
    run = tmp_path / "run"
    _finish(run, "train", _head_config(run), {"dev": {}})
    other = _head_config(run, lr=0.5, seed=3, device="cpu")
    with pytest.raises(RunConfigError) as err:
        finished_or_refuse(run, other, "train")
    assert str(err.value) == (
        f"{run} holds a finished run of another config (seed: saved 0, new 3; lr: saved 0.001, "
        "new 0.5): run with the saved settings, or use a new --out"
    )  # device is volatile: not named
    assert isinstance(err.value, ValueError)  # the CLI answers it with exit code 2


def test_a_finished_run_of_another_kind_is_refused(tmp_path):
    from snowfire.finetune import FinetuneConfig

    run = tmp_path / "run"
    _finish(run, "train", _head_config(run), {"dev": {}})
    fire = FinetuneConfig(encoder="minilm", task="sst2", data="data", out=str(run))
    with pytest.raises(RunConfigError, match=r"another kind \(.*config.json has no 'finetune'"):
        finished_or_refuse(run, fire, "finetune")


def test_a_field_the_saved_config_lacks_agrees_only_at_its_default(tmp_path):
    """A run saved before a field existed is the same run when the field keeps its default."""
    run = tmp_path / "run"
    cfg = _head_config(run)
    saved = cfg.to_json()
    del saved["max_train_examples"]
    assert config_changes(saved, cfg) == {}
    capped = _head_config(run, max_train_examples=100)
    assert config_changes(saved, capped) == {"max_train_examples": ("(not saved)", 100)}


def test_extra_values_are_compared_beside_the_fields(tmp_path):
    cfg = _head_config(tmp_path)
    saved = cfg.to_json() | {"grid_lrs": [1e-3]}
    assert config_changes(saved, cfg, {"grid_lrs": (1e-3,)}) == {}  # a tuple reads back a list
    with pytest.raises(
        RunConfigError,
        match=r"CKPT was written by another config "
        r"\(grid_lrs: saved \[0.001\], new \[0.002\]\)",
    ):
        check_same_config(saved, cfg, "CKPT was written by", {"grid_lrs": [2e-3]})


# -- which fields may change between attempts: marked on the configs themselves


def _run_configs():
    from snowfire.compare.config import CompareConfig
    from snowfire.finetune.config import FinetuneConfig
    from snowfire.heads.config import TrainConfig

    return {
        # pause_at, stop_at: a race's rung and stop, the same run (tests/test_protocol.py)
        TrainConfig: {
            "out",
            "progress",
            "device",
            "max_memory_gb",
            "pause_at",
            "stop_at",
            "keep_state",  # keeps RUN/final.pt beside the same run
        },
        FinetuneConfig: {
            "out",
            "progress",
            "device",
            "checkpoint_every",
            "curve_points",  # scored for the curve only: same weights
            "pause_at",
            "stop_at",
            "keep_remade_start",  # reuses a run whose start was trained again, as it is
        },
        # not reused as a whole (its cells are runs): nothing of it is volatile
        CompareConfig: set(),
    }


def test_every_run_config_marks_what_may_change_between_attempts():
    for config, volatile in _run_configs().items():
        assert volatile_fields(config) == volatile, config.__name__


@pytest.mark.parametrize("name", ["TrainConfig", "FinetuneConfig"])
def test_every_field_but_the_volatile_ones_tells_two_runs_apart(name, tmp_path):
    """One changed field at a time in a saved config: named when it is not volatile, ignored
    when it is (the shape of tests/test_keys_identity.py)."""
    from snowfire.finetune import FinetuneConfig

    fire = FinetuneConfig(encoder="minilm", task="sst2", data="data", out=str(tmp_path))
    cfg = _head_config(tmp_path) if name == "TrainConfig" else fire
    volatile = volatile_fields(cfg)
    for field in dataclasses.fields(cfg):
        saved = cfg.to_json() | {field.name: "a value no field takes"}
        changes = config_changes(saved, cfg)
        if field.name in volatile:
            assert changes == {}, field.name
        else:
            assert list(changes) == [field.name], field.name
