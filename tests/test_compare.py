"""`snowfire compare` end to end on the shipped demo sample (two tasks, one seed, quick budget)
with the tiny random BERT; the verdict logic on constructed cells."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from snowfire.compare.verdict import mean_sd
from snowfire.tasks import DEMO_DATA_DIR


def test_mean_sd_of_the_seeds():
    assert mean_sd([1.0, 3.0]) == (2.0, pytest.approx(math.sqrt(2)))
    assert mean_sd([0.8]) == (0.8, None) and mean_sd([0.8, float("nan")]) == (0.8, None)


def test_compare_on_the_demo_sample_and_a_rerun_recomputes_nothing(
    tiny_bert_dir, tmp_path, monkeypatch, capsys
):
    from snowfire.cli.main import main as run_cli

    out = tmp_path / "cmp"
    argv = [
        "compare",
        "--encoder",
        f"hf:{tiny_bert_dir}",
        "--tasks",
        "sst2,stsb",
        "--data",
        str(DEMO_DATA_DIR),
        "--out",
        str(out),
        "--budget",
        "quick",
        "--heads",
        "linear",
        "--quiet",
    ]
    assert run_cli(argv) == 0
    results = json.loads((out / "results.json").read_text())
    table = (out / "table.md").read_text()
    assert capsys.readouterr().out.count("] sst2 ") == 2  # one ❄️ and one 🔥 cell
    for task, metric in (("sst2", "accuracy"), ("stsb", "pearson")):
        s = results["tasks"][task]
        assert s["metric"] == metric and s["best_head"] == "linear"
        snow_cell = next(c for c in results["cells"] if c["task"] == task and c["mode"] == "snow")
        fire_cell = next(c for c in results["cells"] if c["task"] == task and c["mode"] == "fire")
        assert s["snow"]["dev"][0] == snow_cell["metrics"]["dev"][metric]
        assert s["fire"]["dev"][0] == fire_cell["metrics"]["dev"][metric]
        delta = s["fire"]["dev"][0] - s["snow"]["dev"][0]
        v = s["verdict"]  # the demo sample has no test split: Δ on dev, with its interval
        assert v["split"] == "dev" and v["delta"]["delta"] == pytest.approx(delta, abs=1e-12)
        assert v["delta"]["low"] <= v["delta"]["delta"] <= v["delta"]["high"]
        # one seed a cell: the interval holds the examples' noise only, and says so
        assert v["delta"]["seeds"] == [1, 1]
        # a call only from converged cells: each cell's curve is its log's, marked
        from snowfire.compare.convergence import mark_curve, read_curve

        marks = [
            mark_curve(read_curve(c["run"], metric), cap=cap)
            for c, cap in ((snow_cell, 3), (fire_cell, 2))
        ]
        assert [c["status"] for side in ("snow", "fire") for c in v["curves"][side]] == [
            m.status for m in marks
        ]
        if not all(m.converged for m in marks):
            assert v["verdict"] == "budget-limited: no verdict"
            assert "still improving at the cap" in v["text"]
        else:
            assert "1 seed, its restarts' spread is not in the interval" in v["text"]
        assert (out / f"curves-{task}.png").stat().st_size > 1000
    # table.md shows results.json's numbers
    row = next(line for line in table.splitlines() if "(ours) | ❄️ | dev" in line)
    cells = [c.strip() for c in row.strip("|").split("|")][3:]
    want = [f"{100 * results['tasks'][t]['snow']['dev'][0]:.1f}" for t in ("sst2", "stsb")]
    assert cells == want
    deltas = next(line for line in table.splitlines() if line.startswith("| Δ = 🔥 − ❄️ [95%"))
    got = re.findall(r"[+-]\d+\.\d", deltas)  # Δ, low, high per task
    want = [
        f"{100 * results['tasks'][t]['verdict']['delta'][k]:+.1f}"
        for t in ("sst2", "stsb")
        for k in ("delta", "low", "high")
    ]
    assert got == want
    said = next(line for line in table.splitlines() if line.startswith("| verdict | | dev"))
    assert said.endswith(
        " | ".join(results["tasks"][t]["verdict"]["verdict"] for t in ("sst2", "stsb")) + " |"
    )
    assert "| BERT-base (paper) | 🔥 | test | 93.5 | 87.1 |" in table
    assert "; the paper's rows are its test scores." in table  # the notes say what they are
    assert "❄️ features of pairs encoded joint." in table  # stsb is a pair task
    # the zero-training row: SST-2's majority label counted by hand, STS-B's cosine recomputed
    # from the separately encoded dev features compare extracted for it
    from collections import Counter

    from snowfire.cache import open_reader
    from snowfire.heads.baseline import cosine_scores
    from snowfire.tasks import evaluate, read_split

    train = Counter(e.label for e in read_split("sst2", DEMO_DATA_DIR, "train"))
    label = max(sorted(train), key=lambda k: train[k])
    dev = [e.label for e in read_split("sst2", DEMO_DATA_DIR, "dev")]
    majority = sum(g == label for g in dev) / len(dev)
    assert results["tasks"]["sst2"]["baseline"]["dev"] == pytest.approx(majority, abs=1e-12)
    reader = open_reader(str(out / "store"))
    info = reader.find_featureset(
        encoder=f"hf:{tiny_bert_dir}", task="stsb", split="dev", pair_encoding="separate"
    )
    gold = [float(e.label) for e in read_split("stsb", DEMO_DATA_DIR, "dev")]
    cosine = evaluate("stsb", gold, cosine_scores(reader, info).tolist())["pearson"]
    assert results["tasks"]["stsb"]["baseline"]["dev"] == pytest.approx(cosine, abs=1e-9)
    row = next(line for line in table.splitlines() if "(ours) | no training | dev" in line)
    assert row.endswith(f"| {100 * majority:.1f} | {100 * cosine:.1f} |")
    assert "Budget quick" in table and "max_train_examples" in table
    for png in ("table.png", "layer_weights.png"):
        assert (out / png).stat().st_size > 1000

    # a rerun trains and extracts nothing, and writes the same table

    import snowfire.finetune.trainer  # imported here only if a cell trained in this process
    import snowfire.heads.trainer
    from snowfire import extractor

    def refuse(*args, **kwargs):
        raise AssertionError("a rerun recomputed a cell")

    monkeypatch.setattr(snowfire.heads.trainer, "_fit", refuse)
    monkeypatch.setattr(snowfire.finetune.trainer, "build_model", refuse)
    extract = extractor.run_extract
    monkeypatch.setattr(extractor, "run_extract", refuse)
    assert run_cli([*argv, "--no-cell-processes"]) == 0  # a cell that trains: refused here
    assert (out / "table.md").read_text() == table

    # the store lost (a new machine): the features are made again, training nothing, and the
    # table stays the same: making them is counted once, the repeat kept apart as remade
    import shutil

    before = {t: json.loads((out / "extract" / f"{t}.json").read_text()) for t in ("sst2", "stsb")}
    shutil.rmtree(out / "store")
    monkeypatch.setattr(extractor, "run_extract", extract)
    assert run_cli([*argv, "--no-cell-processes"]) == 0
    assert (out / "table.md").read_text() == table
    for task, was in before.items():
        now = json.loads((out / "extract" / f"{task}.json").read_text())
        assert {k: now[k] for k in was} == was
        assert now["remade_examples"] == was["examples"] and now["remade_cpu_seconds"] > 0


def test_the_analyses_write_json_tables_and_plots(tiny_bert_dir, tmp_path):
    pytest.importorskip("sklearn")
    from snowfire.cli.main import main as run_cli
    from tests.helpers.tasks import finetune_config, write_sst2, write_stsb

    data = tmp_path / "data"
    write_sst2(data, sizes=(("train", 120), ("dev", 30)))
    write_stsb(data, sizes=(("train", 60), ("dev", 20)))
    enc = f"hf:{tiny_bert_dir}"
    out = tmp_path / "an"
    where = ["--encoder", enc, "--data", str(data), "--out", str(out)]
    base = [*where, "--epochs", "2"]
    assert run_cli(["analyze", "pairs", "--tasks", "stsb", "--head", "linear", *base]) == 0
    pairs = json.loads((out / "pairs.json").read_text())
    assert set(pairs["stsb"]) == {"joint", "separate"}
    runs = {p.parent.name for p in (out / "pairs" / "stsb").glob("*/seed0")}
    assert runs == {"joint", "separate"}
    assert "1 seed(s), 2 epochs at most" in (out / "pairs.md").read_text()  # the caps, named
    for pair in ("joint", "separate"):  # the table's score is the run's own
        run = out / "pairs" / "stsb" / pair / "seed0"
        assert (
            pairs["stsb"][pair][0]
            == json.loads((run / "metrics.json").read_text())["dev"]["pearson"]
        )
        assert json.loads((run / "config.json").read_text())["train"]["pair_encoding"] == pair

    from snowfire.finetune import train

    fire = tmp_path / "fire"
    train(finetune_config(enc, "sst2", data, fire, epochs=1))
    argv = ["analyze", "probes", "--tasks", "sst2", "--finetuned", f"sst2={fire}", *base]
    assert run_cli(argv) == 0
    probes = json.loads((out / "probes.json").read_text())
    assert set(probes["sst2"]) == {"pretrained", "fine-tuned"}
    assert len(probes["sst2"]["pretrained"]) == 3  # embeddings + 2 layers

    assert run_cli(["analyze", "mi", "--tasks", "sst2", *where]) == 0  # mi trains nothing
    mi = json.loads((out / "mi.json").read_text())
    assert len(mi["sst2"]["mi"]) == 3 and all(v >= 0 for v in mi["sst2"]["mi"])
    for name in ("pairs", "probes", "mi"):
        assert (out / f"{name}.png").stat().st_size > 1000
        assert f"![{name}]({name}.png)" in (out / f"{name}.md").read_text()


def test_the_full_budget_tunes_fire_on_dev(tiny_bert_dir, tmp_path, monkeypatch):
    from snowfire.cli.main import main as run_cli
    from snowfire.finetune import grid, recipe  # grid imported first: it binds recipe's value
    from tests.helpers.tasks import write_sst2

    monkeypatch.setattr(recipe, "GRID_EPOCHS", (1, 2))  # a small grid for the test
    monkeypatch.setattr(grid, "GRID_EPOCHS", (1, 2))
    data = write_sst2(tmp_path / "data")
    out = tmp_path / "full"
    argv = [
        "compare",
        "--encoder",
        f"hf:{tiny_bert_dir}",
        "--tasks",
        "sst2",
        "--data",
        str(data),
        "--out",
        str(out),
        "--budget",
        "full",
        "--heads",
        "linear",
        "--seeds",
        "1",
        "--quiet",
        "--no-cell-processes",  # the small grid is patched into this process
    ]
    assert run_cli(argv) == 0
    grid = json.loads((out / "fire" / "sst2" / "seed0" / "grid.json").read_text())
    assert len(grid["cells"]) == 3 * 2 and grid["chosen"]["selection"] == max(
        c["selection"] for c in grid["cells"]
    )
    results = json.loads((out / "results.json").read_text())
    fire = next(c for c in results["cells"] if c["mode"] == "fire")
    assert (
        fire["metrics"]["dev"]
        == json.loads((Path(grid["chosen"]["run"]) / "metrics.json").read_text())["dev"]
    )
    assert "rate and epochs tuned on the selection split" in (out / "table.md").read_text()
    # the data directory has a labelled test split: both sides are scored on it, and shown
    s = results["tasks"]["sst2"]
    snow = next(c for c in results["cells"] if c["mode"] == "snow")
    assert s["snow"]["test"][0] == snow["metrics"]["test"]["accuracy"]
    assert s["fire"]["test"][0] == fire["metrics"]["test"]["accuracy"]
    table = (out / "table.md").read_text()
    assert f"| (ours) | ❄️ | test | {100 * s['snow']['test'][0]:.1f} |" in table.replace(
        f"hf:{tiny_bert_dir} (ours)", "(ours)"
    )
    assert s["verdict"]["split"] == "test"  # the verdict is the test split's


def test_ner_params_runs_the_six_cells_of_table_5(tiny_bert_dir, tmp_path):
    from snowfire.cli.main import main as run_cli
    from tests.helpers.tasks import write_conll

    data = write_conll(tmp_path / "data", sizes=(("train", 24), ("dev", 8)))
    out = tmp_path / "an"
    argv = [
        "analyze",
        "ner-params",
        "--encoder",
        f"hf:{tiny_bert_dir}",
        "--data",
        str(data),
        "--out",
        str(out),
        "--epochs",
        "1",
        "--max-train-examples",
        "16",
    ]
    assert run_cli(argv) == 0
    cells = json.loads((out / "ner-params.json").read_text())["conll2003"]
    assert list(cells) == [
        "❄️ + CRF",
        "❄️ + BiLSTM + CRF",
        "🔥 + CRF",
        "🔥 + CRF + gradual unfreezing",
        "🔥 + BiLSTM + CRF",
        "🔥 + BiLSTM + CRF + gradual unfreezing",
    ]
    root = out / "ner-params"
    for run, name, lstm, gradual in [
        ("fire-lstm0-all", "🔥 + CRF", 0, False),
        ("fire-lstm200-gu", "🔥 + BiLSTM + CRF + gradual unfreezing", 200, True),
    ]:
        config = json.loads((root / run / "seed0" / "config.json").read_text())
        assert config["finetune"]["output_lstm"] == lstm and config["finetune"]["crf"] is True
        assert config["recipe"]["settings"]["gradual_unfreezing"] is gradual
        metrics = json.loads((root / run / "seed0" / "metrics.json").read_text())
        assert cells[name][0] == metrics["dev"]["span_f1"]  # the table's score is the run's
    assert (
        json.loads((root / "bilstm-crf" / "seed0" / "config.json").read_text())["train"]["head"]
        == "bilstm-crf"
    )
    table = (out / "ner-params.md").read_text()
    assert "| ❄️ + CRF | " in table and "| 91.9 |" in table  # the paper's ELMo row beside ours
    assert (out / "ner-params.png").stat().st_size > 1000
    mtime = (root / "fire-lstm0-all" / "seed0" / "metrics.json").stat().st_mtime_ns
    assert run_cli(argv) == 0  # a rerun recomputes nothing
    assert (root / "fire-lstm0-all" / "seed0" / "metrics.json").stat().st_mtime_ns == mtime


def test_elmo_biattention_on_the_fixture_and_refuses_other_encoders(tmp_path, capsys):
    from snowfire.cli.main import main as run_cli
    from tests.helpers import FIXTURES, need_shared
    from tests.helpers.tasks import write_stsb

    elmo = need_shared(FIXTURES / "allennlp_elmo")
    options, weights = elmo / "options.json", elmo / "lm_weights.hdf5"
    data = write_stsb(tmp_path / "data", sizes=(("train", 16), ("dev", 8)))
    out = tmp_path / "an"
    base = ["--data", str(data), "--out", str(out), "--epochs", "1", "--tasks", "stsb"]
    assert run_cli(["analyze", "elmo-biattention", "--encoder", "minilm", *base]) == 2
    assert "elmo-biattention fine-tunes ELMo: --encoder elmo:" in capsys.readouterr().err
    assert (
        run_cli(["analyze", "elmo-biattention", "--encoder", f"elmo:{options},{weights}", *base])
        == 0
    )
    result = json.loads((out / "elmo-biattention.json").read_text())["stsb"]
    for key, bi in (("bi-attention", True), ("none", False)):
        run = out / "elmo-biattention" / "stsb" / key / "seed0"
        assert json.loads((run / "config.json").read_text())["finetune"]["bi_attention"] is bi
        assert result[key][0] == json.loads((run / "metrics.json").read_text())["dev"]["pearson"]
    assert "| stsb |" in (out / "elmo-biattention.md").read_text()


def test_pair_encoding_and_head_options_reach_every_snow_cell(monkeypatch, tmp_path):
    from snowfire import heads
    from snowfire.compare import CompareConfig, Mode
    from snowfire.compare.run import plan, run_cell

    seen = []
    monkeypatch.setattr(heads, "train", lambda cfg: seen.append(cfg) or {"dev": {}})
    cfg = CompareConfig(
        encoder="minilm",
        tasks=["stsb"],
        data=str(DEMO_DATA_DIR),
        out=str(tmp_path),
        heads=["esim"],
        pair_encoding="separate",
        hparams={"pooled": True},
        seeds=2,
    )
    assert cfg.pair_encoding_used == "separate"
    for cell in plan(cfg):
        if cell.mode is Mode.SNOW:
            run_cell(cfg, cell, cfg.pair_encoding_used)
    assert [(c.head, c.seed, c.pair_encoding, c.hparams) for c in seen] == [
        ("esim", 0, "separate", {"pooled": True}),
        ("esim", 1, "separate", {"pooled": True}),
    ]
    default = CompareConfig(encoder="minilm", tasks=["stsb"], data="d", out="o")
    assert default.pair_encoding_used == "joint" and default.hparams == {}
    with pytest.raises(ValueError, match="pair_encoding: ELMo encodes each text alone"):
        CompareConfig(
            encoder="elmo:o.json,w.hdf5", tasks=["stsb"], data="d", out="o", pair_encoding="joint"
        )


def test_the_extraction_cost_says_which_splits_compare_made():
    from snowfire.compare.table import _extraction

    assert _extraction({}) == "in the store"  # everything was there before compare ran
    part = {"seconds": 11.04, "splits": ["dev"], "all_splits": ["train", "dev"]}
    assert _extraction(part) == "11 (dev; train in the store)"
    whole = {"seconds": 99.6, "splits": ["dev", "train"], "all_splits": ["train", "dev"]}
    assert _extraction(whole) == "100"


def test_a_split_made_again_is_counted_once_and_the_repeat_kept_apart():
    from types import SimpleNamespace as Info

    from snowfire.compare.run import extraction_record

    first = extraction_record(
        {},
        ["train", "dev"],
        [Info(split="train", num_examples=300), Info(split="dev", num_examples=100)],
        (20.0, 36.0),
    )
    assert first == {
        "seconds": 20.0,
        "cpu_seconds": 36.0,
        "splits": ["dev", "train"],
        "examples": 400,
    }
    # the store lost train only, and a test split is new: 300 examples again, 100 new, in one
    # extraction of 8 s wall, 12 s CPU: a quarter of it is the new split's
    both = [Info(split="train", num_examples=300), Info(split="test", num_examples=100)]
    got = extraction_record(first, ["train", "test"], both, (8.0, 12.0))
    assert got == {
        "seconds": 22.0,
        "cpu_seconds": 39.0,
        "splits": ["dev", "test", "train"],
        "examples": 500,
        "remade_seconds": 6.0,
        "remade_cpu_seconds": 9.0,
        "remade_examples": 300,
    }
    again = extraction_record(got, ["train"], both[:1], (5.0, 7.0))  # and once more
    assert (again["seconds"], again["remade_seconds"], again["remade_cpu_seconds"]) == (
        22.0,
        11.0,
        16.0,
    )
    assert again["examples"] == 500 and again["remade_examples"] == 600


@pytest.mark.subprocess  # a real `snowfire compare` process, killed with SIGKILL
def test_compare_killed_mid_run_then_rerun_gives_the_same_table(tiny_bert_dir, tmp_path):
    import os
    import signal
    import subprocess
    import time

    from tests.helpers import snowfire_cli

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    base = snowfire_cli(
        "compare",
        "--encoder",
        f"hf:{tiny_bert_dir}",
        "--tasks",
        "sst2",
        "--data",
        str(DEMO_DATA_DIR),
        "--heads",
        "linear",
        "--budget",
        "quick",
        "--quiet",
    )
    done = subprocess.run(base + ["--out", str(tmp_path / "a")], env=env, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()[-2000:]

    out = tmp_path / "b"
    proc = subprocess.Popen(
        base + ["--out", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    fire = out / "fire" / "sst2" / "seed0"
    deadline = time.monotonic() + 300
    while not (fire / "config.json").exists():  # ❄️ is done and 🔥 has started
        assert proc.poll() is None and time.monotonic() < deadline, "🔥 never started"
        time.sleep(0.05)
    time.sleep(0.2)  # into the 🔥 run, well before its end (it takes seconds)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL  # killed before it finished
    assert not (out / "results.json").exists()
    done = subprocess.run(base + ["--out", str(out)], env=env, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()[-2000:]

    ref, got = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("a", "b"))
    assert [c["metrics"] for c in got["cells"]] == [c["metrics"] for c in ref["cells"]]
    rows = [(tmp_path / d / "table.md").read_text().split("\n\n")[1] for d in ("a", "b")]
    assert rows[0] == rows[1]  # Table 2's rows, Δ and verdict (the cost table holds wall times)
