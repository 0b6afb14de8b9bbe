"""heads/continuation.py: a ❄️ run at a larger epoch cap started from a finished run at a
smaller one ends exactly as the larger cap's run trained from scratch (its log, metrics and
weights), trains only the new epochs, and leaves the smaller run's files as they were; and
`snowfire compare --epochs-scale 2` on a finished comparison continues its ❄️ runs and trains
its 🔥 runs again in their own folders."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from snowfire.cli.main import main as run_cli
from tests.helpers.tasks import write_sst2

pytestmark = pytest.mark.slow  # tiny BERT runs


@pytest.fixture(scope="module")
def task(tiny_bert_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("continuation")
    data = write_sst2(root / "data", sizes=(("train", 48), ("dev", 16)))
    store = root / "store"
    argv = ["extract", "--encoder", f"hf:{tiny_bert_dir}", "--task", "sst2", "--data", str(data)]
    assert run_cli([*argv, "--store", str(store), "--quiet"]) == 0
    return data, store


def _cfg(tiny_bert_dir, task, out, **kw):
    from snowfire.heads import TrainConfig

    data, store = task
    options = {"head": "linear", "lr": 0.01, "patience": 4, "progress": False}
    options |= {"keep_state": True} | kw
    return TrainConfig(
        store=str(store),
        encoder=f"hf:{tiny_bert_dir}",
        task="sst2",
        data=str(data),
        out=str(out),
        **options,
    )


def _log(run: Path) -> list[dict]:
    return [
        {k: v for k, v in json.loads(line).items() if k != "seconds"}
        for line in (run / "log.jsonl").read_text().splitlines()
    ]


def _same_run(a: Path, b: Path) -> None:
    assert _log(a) == _log(b)
    assert json.loads((a / "metrics.json").read_text()) == json.loads(
        (b / "metrics.json").read_text()
    )
    wa, wb = (load_file(r / "weights.safetensors") for r in (a, b))
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    for split in ("dev", "select"):
        assert (a / "predictions" / f"{split}.tsv").read_text() == (
            b / "predictions" / f"{split}.tsv"
        ).read_text()


def _hashes(run: Path) -> dict[str, str]:
    return {
        str(p.relative_to(run)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(run.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def _epochs_trained(monkeypatch) -> list[int]:
    """Every epoch a ❄️ head trains from now on (heads/trainer.py draws each epoch's order
    once from snowfire.tasks; 🔥 draws its batches elsewhere)."""
    import snowfire.tasks

    seen: list[int] = []
    real = snowfire.tasks.epoch_rng
    monkeypatch.setattr(snowfire.tasks, "epoch_rng", lambda s, e: seen.append(e) or real(s, e))
    return seen


@pytest.mark.parametrize("stop_at", [None, 2])  # ended by its cap, or by a race at epoch 2
def test_a_larger_cap_goes_on_from_the_smaller_ones_end(
    tiny_bert_dir, task, tmp_path, monkeypatch, stop_at
):
    from snowfire.heads import train
    from snowfire.heads.continuation import continue_from

    small = _cfg(tiny_bert_dir, task, tmp_path / "e3", epochs=3, stop_at=stop_at, patience=8)
    train(small)
    assert (tmp_path / "e3" / "final.pt").is_file()  # not ended by early stopping
    before = _hashes(tmp_path / "e3")
    whole = _cfg(tiny_bert_dir, task, tmp_path / "whole", epochs=6, patience=8)
    train(whole)

    bigger = replace(whole, out=str(tmp_path / "e6"))
    assert continue_from(tmp_path / "e3", bigger) == "continued"
    trained = _epochs_trained(monkeypatch)
    train(bigger)
    ran = json.loads((tmp_path / "whole" / "config.json").read_text())["epochs_run"]
    assert trained == list(range((stop_at or 3) + 1, ran + 1))  # only what e3 had not run
    _same_run(tmp_path / "e6", tmp_path / "whole")
    config = json.loads((tmp_path / "e6" / "config.json").read_text())
    assert config["continued_from"]["run"] == str(tmp_path / "e3")
    assert config["train"]["epochs"] == 6 and config["epochs_run"] == ran
    assert _hashes(tmp_path / "e3") == before  # the smaller run is read, never changed


def test_an_early_stopped_run_is_the_larger_caps_run(tiny_bert_dir, task, tmp_path, monkeypatch):
    from snowfire.heads import train
    from snowfire.heads.continuation import continue_from

    stopping = {"lr": 0.5, "patience": 1}  # a rate that overshoots: a worse epoch comes soon
    small = _cfg(tiny_bert_dir, task, tmp_path / "e8", epochs=8, **stopping)
    train(small)
    made = json.loads((tmp_path / "e8" / "config.json").read_text())
    assert made["epochs_run"] < 8, "this case needs a run that stops early"
    assert not (tmp_path / "e8" / "final.pt").exists()
    whole = _cfg(tiny_bert_dir, task, tmp_path / "whole", epochs=16, **stopping)
    train(whole)

    bigger = replace(whole, out=str(tmp_path / "e16"))
    assert continue_from(tmp_path / "e8", bigger) == "same"
    trained = _epochs_trained(monkeypatch)
    assert train(bigger) == json.loads((tmp_path / "whole" / "metrics.json").read_text())
    assert trained == []
    _same_run(tmp_path / "e16", tmp_path / "whole")


def test_another_config_or_a_smaller_cap_is_refused(tiny_bert_dir, task, tmp_path):
    from snowfire.heads import train
    from snowfire.heads.continuation import continue_from
    from snowfire.rundir import RunConfigError

    train(_cfg(tiny_bert_dir, task, tmp_path / "e2", epochs=2))
    with pytest.raises(RunConfigError, match="lr: saved 0.01, new 0.02"):
        continue_from(tmp_path / "e2", _cfg(tiny_bert_dir, task, tmp_path / "a", epochs=4, lr=0.02))
    with pytest.raises(RunConfigError, match="cap 2 is larger than the new run's 1"):
        continue_from(tmp_path / "e2", _cfg(tiny_bert_dir, task, tmp_path / "b", epochs=1))
    with pytest.raises(RunConfigError, match="not a finished run"):
        continue_from(tmp_path / "nothing", _cfg(tiny_bert_dir, task, tmp_path / "c", epochs=4))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_compare_with_a_larger_epochs_scale_trains_only_the_continuation(
    tiny_bert_dir, task, tmp_path, monkeypatch
):
    import snowfire.finetune.trainer

    data, _ = task
    out = tmp_path / "out"
    argv = ["compare", "--encoder", f"hf:{tiny_bert_dir}", "--tasks", "sst2", "--data", str(data)]
    argv += ["--out", str(out), "--budget", "quick", "--seeds", "1", "--trials", "2", "--quiet"]
    argv += ["--no-cell-processes"]  # the test spies on the trainers in this process
    assert run_cli(argv) == 0
    first = {p: _hashes(p) for p in out.glob("*/sst2/trial*/seed0")}
    assert len(first) == 4
    snow_ran = {
        k: json.loads((out / "snow" / "sst2" / f"trial{k}" / "seed0" / "config.json").read_text())
        for k in (0, 1)
    }

    trained = _epochs_trained(monkeypatch)
    built = []
    real_build = snowfire.finetune.trainer.build_model
    monkeypatch.setattr(
        snowfire.finetune.trainer,
        "build_model",
        lambda cfg, spec: built.append(cfg.out) or real_build(cfg, spec),
    )
    assert run_cli([*argv, "--epochs-scale", "2"]) == 0
    assert {p: _hashes(p) for p in first} == first  # the finished runs: untouched
    scaled = out / "snow" / "sst2" / "epochs-x2"
    new_epochs = 0
    for k, made in snow_ran.items():
        config = json.loads((scaled / f"trial{k}" / "seed0" / "config.json").read_text())
        assert config["continued_from"]["run"] == str(out / "snow" / "sst2" / f"trial{k}" / "seed0")
        assert config["train"]["epochs"] == 2 * made["train"]["epochs"]
        new_epochs += config["epochs_run"] - made["epochs_run"]
        log = _log(scaled / f"trial{k}" / "seed0")
        assert log[: made["epochs_run"]] == _log(out / "snow" / "sst2" / f"trial{k}" / "seed0")
    assert len(trained) == new_epochs  # ❄️ trained only the epochs beyond the first run's
    fire = {str(out / "fire" / "sst2" / "epochs-x2" / f"trial{k}" / "seed0") for k in (0, 1)}
    assert set(built) == fire  # 🔥 again, from scratch, in its own folders
    results = json.loads((out / "results.json").read_text())
    assert all("epochs-x2" in c["run"] for c in results["cells"])


@pytest.mark.parametrize("lr", [0.02, None])  # another config; no smaller run at all
def test_a_cell_without_a_smaller_run_of_its_config_trains_anew(tmp_path, capsys, lr):
    """compare/run.py `go_on_from_smaller_scale` on constructed run directories: a finished
    smaller-scale run of another config is no start (said, nothing written), and a cell with no
    smaller-scale run has none."""
    from snowfire.compare import CompareConfig
    from snowfire.compare.run import cell_config, go_on_from_smaller_scale, plan

    data = write_sst2(tmp_path / "data", sizes=(("train", 8), ("dev", 4)))
    out = tmp_path / "out"
    common = {"encoder": "minilm", "tasks": ["sst2"], "data": str(data), "out": str(out)}
    cfg = CompareConfig(**common, trials=1, epochs_scale=2, progress=False)
    cell = next(c for c in plan(cfg) if c.mode.value == "snow")
    config = cell_config(cfg, cell, "joint")
    assert cell.run == str(out / "snow" / "sst2" / "epochs-x2" / "trial0" / "seed0")
    assert (
        config.keep_state
        and config.epochs
        == 2 * cell_config(CompareConfig(**common, trials=1, progress=False), cell, "joint").epochs
    )
    if lr is not None:
        base = out / "snow" / "sst2" / "trial0" / "seed0"
        base.mkdir(parents=True)
        made = config.to_json() | {"epochs": config.epochs // 2, "lr": lr}
        (base / "config.json").write_text(json.dumps({"train": made}))
        (base / "metrics.json").write_text("{}")
    assert go_on_from_smaller_scale(cfg, cell, config) is None
    assert not Path(cell.run).exists()
    said = capsys.readouterr().out
    assert (f"lr: saved {lr}" in said and "trains anew" in said) if lr else said == ""
