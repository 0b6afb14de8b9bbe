"""`snowfire finetune --grid MODE` (FinetuneConfig.grid): cells read from the sub-runs' own logs,
the choice made on dev only, the chosen run's outputs in RUN, a finished grid returned as it is.
A finetune job with grid params: tests/test_jobs_api.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.tasks import finetune_config, write_sst2


def _curve(run: Path) -> dict[int, float]:
    rows = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    return {r["epoch"]: r["selection"]["accuracy"] for r in rows}


@pytest.mark.parametrize("exact", [False, True])
def test_grid_cells_choice_and_outputs(tiny_bert_dir, tmp_path, exact):
    from snowfire.finetune import train

    data = write_sst2(tmp_path / "data")
    grid = {"grid": "exact" if exact else "shared", "grid_lrs": [1e-4, 3e-3], "grid_epochs": [2, 1]}
    cfg = finetune_config(f"hf:{tiny_bert_dir}", "sst2", data, tmp_path / "run", lr=None, **grid)
    metrics = train(cfg)  # a config with a grid is a grid
    run = tmp_path / "run"
    record = json.loads((run / "grid.json").read_text())
    assert record["mode"] == ("exact" if exact else "shared") and len(record["cells"]) == 4
    for cell in record["cells"]:  # each cell recomputed by hand from a sub-run's log
        name = f"lr={cell['lr']:g}" + (f"-epochs={cell['epochs']}" if exact else "")
        curve = _curve(run / "grid" / name)
        assert max(curve) == (cell["epochs"] if exact else 2)
        assert cell["selection"] == max(v for e, v in curve.items() if e <= cell["epochs"])
    best = max(c["selection"] for c in record["cells"])
    chosen = record["chosen"]
    assert chosen["selection"] == best  # the choice reads the selection split, and only it
    ties = [c for c in record["cells"] if c["selection"] == best]
    assert (chosen["lr"], chosen["epochs"]) == min((c["lr"], c["epochs"]) for c in ties)
    chosen_run = Path(chosen["run"])
    if not exact:  # the cell is trained as its own run unless it is a rate's whole run
        own = chosen["epochs"] < 2
        assert chosen_run.name == f"lr={chosen['lr']:g}" + (
            f"-epochs={chosen['epochs']}" if own else ""
        )
    config = json.loads((chosen_run / "config.json").read_text())["finetune"]
    assert config["epochs"] == chosen["epochs"]
    assert json.loads((chosen_run / "config.json").read_text())["finetune"]["lr"] == chosen["lr"]
    assert metrics == json.loads((chosen_run / "metrics.json").read_text())
    assert metrics == json.loads((run / "metrics.json").read_text())
    for split in ("train", "dev", "test"):
        name = f"predictions/{split}.tsv"
        assert (run / name).read_text() == (chosen_run / name).read_text()
    info = json.loads((run / "config.json").read_text())["grid"]
    assert info["chosen"]["lr"] == chosen["lr"] and info["base"] == cfg.to_json()
    assert (info["lrs"], info["epochs"]) == ([1e-4, 3e-3], [1, 2])
    assert all(k not in config or config[k] is None for k in ("grid", "grid_lrs", "grid_epochs"))
    table = (run / "grid.md").read_text()
    assert (
        f"**{100 * chosen['selection']:.1f}**" in table and table.count("\n| ") == 4
    )  # header, rule, one row per rate
    assert (run / "grid.png").stat().st_size > 1000


def test_a_finished_grid_is_returned_and_another_refused(tiny_bert_dir, tmp_path, monkeypatch):
    from dataclasses import replace

    from snowfire.finetune import grid

    data = write_sst2(tmp_path / "data")
    cfg = finetune_config(
        f"hf:{tiny_bert_dir}",
        "sst2",
        data,
        tmp_path / "run",
        lr=None,
        grid="shared",
        grid_lrs=[1e-3],
        grid_epochs=[1],
    )
    first = grid.run_grid(cfg)

    def no_training(*args, **kwargs):
        raise AssertionError("a finished grid trained again")

    monkeypatch.setattr("snowfire.finetune.trainer.train", no_training)
    assert grid.run_grid(cfg) == first
    # volatile fields (rundir.finished_or_refuse): where the grid runs and how it reports
    assert grid.run_grid(replace(cfg, device="cpu", progress=True)) == first
    with pytest.raises(
        ValueError,
        match=r"finished run of another config \(grid_lrs: saved \[0.001\], new \[0.002\]\)",
    ):
        grid.run_grid(replace(cfg, grid_lrs=[2e-3]))
    with pytest.raises(ValueError, match=r"another config \(seed: saved 0, new 1\)"):
        grid.run_grid(replace(cfg, seed=1))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"grid": "shared", "lr": 1e-4},
            "FinetuneConfig.lr: a grid tries the rates itself "
            r"\(grid_lrs\): drop lr 0.0001",
        ),
        ({"grid": "all"}, "FinetuneConfig.grid: expected one of shared, exact, got 'all'"),
        ({"grid_lrs": [1e-3]}, r"FinetuneConfig.grid_lrs: only for a grid \(set grid\)"),
        ({"grid_epochs": [2]}, r"FinetuneConfig.grid_epochs: only for a grid \(set grid\)"),
        (
            {"grid": "exact", "grid_epochs": [0]},
            r"FinetuneConfig.grid_epochs: expected >= 1, got 0 in \[0\]",
        ),
        (
            {"grid": "exact", "grid_lrs": [1e-3, -1.0]},
            r"FinetuneConfig.grid_lrs: expected > 0, got -1.0 in \[0.001, -1.0\]",
        ),
        ({"grid": "exact", "grid_lrs": []}, "FinetuneConfig.grid_lrs: expected at least one"),
    ],
)
def test_a_grid_config_refuses_a_fixed_rate_and_bad_values(tmp_path, change, message):
    from snowfire.finetune import FinetuneConfig

    with pytest.raises(ValueError, match=message):
        FinetuneConfig(encoder="minilm", task="sst2", data="d", out=str(tmp_path), **change)


def test_grid_values_default_to_the_recipe_and_sorted_epochs(tmp_path):
    from snowfire.finetune import FinetuneConfig
    from snowfire.finetune.grid import grid_values, run_grid

    base = dict(task="sst2", data="d", out=str(tmp_path), grid="shared")
    assert grid_values(FinetuneConfig(encoder="minilm", **base)) == ((2e-5, 3e-5, 5e-5), (2, 3, 4))
    elmo = FinetuneConfig(encoder="elmo:/x", **base, grid_epochs=[4, 1, 4])
    assert grid_values(elmo) == ((5e-4, 1e-3, 2e-3), (1, 4))
    one = FinetuneConfig(encoder="minilm", **base | {"grid": None})
    with pytest.raises(ValueError, match="run_grid: the config asks for no grid"):
        run_grid(one)


def test_the_command_line_grid(tiny_bert_dir, tmp_path, capsys):
    from snowfire.cli.main import main

    data = write_sst2(tmp_path / "data")
    argv = (
        f"finetune --encoder hf:{tiny_bert_dir} --task sst2 --data {data} --out {tmp_path / 'r'} "
        "--batch-size 8 --quiet --grid exact --grid-lrs 1e-3,2e-3 --grid-epochs 1"
    )
    assert main(argv.split()) == 0
    shown = capsys.readouterr().out
    assert "| rate \\ epochs | 1 |" in shown and "sst2 finetune (chosen on dev) dev" in shown
    assert "| 0.001 | " in shown and "| 0.002 | " in shown  # both rates, from one flag
    assert json.loads((tmp_path / "r" / "grid.json").read_text())["mode"] == "exact"
