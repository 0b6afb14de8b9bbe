"""`snowfire finetune --grid`: cells read from the sub-runs' own logs, the choice made on dev
only, the chosen run's outputs in RUN, a finished grid returned as it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_finetune_e2e import _config, write_sst2


def _curve(run: Path) -> dict[int, float]:
    rows = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    return {r["epoch"]: r["dev"]["accuracy"] for r in rows}


@pytest.mark.parametrize("exact", [False, True])
def test_grid_cells_choice_and_outputs(tiny_bert_dir, tmp_path, exact):
    from finetune.grid import run_grid

    data = write_sst2(tmp_path / "data")
    cfg = _config(f"hf:{tiny_bert_dir}", "sst2", data, tmp_path / "run", lr=None)
    metrics = run_grid(cfg, lrs=(1e-4, 3e-3), epochs=(1, 2), exact=exact)
    run = tmp_path / "run"
    record = json.loads((run / "grid.json").read_text())
    assert record["mode"] == ("exact" if exact else "shared") and len(record["cells"]) == 4
    for cell in record["cells"]:  # each cell recomputed by hand from a sub-run's log
        name = f"lr={cell['lr']:g}" + (f"-epochs={cell['epochs']}" if exact else "")
        curve = _curve(run / "grid" / name)
        assert max(curve) == (cell["epochs"] if exact else 2)
        assert cell["dev"] == max(v for e, v in curve.items() if e <= cell["epochs"])
    best = max(c["dev"] for c in record["cells"])
    chosen = record["chosen"]
    assert chosen["dev"] == best  # the choice reads dev, and only dev
    ties = [c for c in record["cells"] if c["dev"] == best]
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
    assert json.loads((run / "config.json").read_text())["grid"]["chosen"]["lr"] == chosen["lr"]
    table = (run / "grid.md").read_text()
    assert (
        f"**{100 * chosen['dev']:.1f}**" in table and table.count("\n| ") == 4
    )  # header, rule, one row per rate
    assert (run / "grid.png").stat().st_size > 1000


def test_a_finished_grid_is_returned_and_another_refused(tiny_bert_dir, tmp_path, monkeypatch):
    from finetune import grid

    data = write_sst2(tmp_path / "data")
    cfg = _config(f"hf:{tiny_bert_dir}", "sst2", data, tmp_path / "run", lr=None)
    first = grid.run_grid(cfg, lrs=(1e-3,), epochs=(1,))

    def no_training(*args, **kwargs):
        raise AssertionError("a finished grid trained again")

    monkeypatch.setattr("finetune.trainer.train", no_training)
    assert grid.run_grid(cfg, lrs=(1e-3,), epochs=(1,)) == first
    with pytest.raises(ValueError, match="holds another grid"):
        grid.run_grid(cfg, lrs=(2e-3,), epochs=(1,))


def test_grid_refuses_a_fixed_rate_and_bad_values(tmp_path):
    from finetune import FinetuneConfig
    from finetune.grid import grid_values, run_grid

    cfg = FinetuneConfig(encoder="minilm", task="sst2", data="d", out=str(tmp_path), lr=1e-4)
    with pytest.raises(ValueError, match="drop --lr"):
        run_grid(cfg)
    base = FinetuneConfig(encoder="minilm", task="sst2", data="d", out=str(tmp_path))
    assert grid_values(base) == ((2e-5, 3e-5, 5e-5), (2, 3, 4))
    elmo = FinetuneConfig(encoder="elmo:/x", task="sst2", data="d", out=str(tmp_path))
    assert grid_values(elmo)[0] == (5e-4, 1e-3, 2e-3)
    with pytest.raises(ValueError, match="grid epochs"):
        grid_values(base, epochs=(0,))


def test_the_command_line_grid(tiny_bert_dir, tmp_path, capsys):
    from cli.main import main

    data = write_sst2(tmp_path / "data")
    argv = (
        f"finetune --encoder hf:{tiny_bert_dir} --task sst2 --data {data} --out {tmp_path / 'r'} "
        "--batch-size 8 --quiet --grid --grid-lrs 1e-3 --grid-epochs 1"
    )
    assert main(argv.split()) == 0
    shown = capsys.readouterr().out
    assert "| rate \\ epochs | 1 |" in shown and "sst2 finetune (chosen on dev) dev" in shown
