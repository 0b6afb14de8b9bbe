"""`snowfire compare --arms`: every arm's cells on the tiny BERT, its Δ against ❄️ and 🔥 from
the verdict's bootstrap, its cost, the cost plot, predict on its saved run, and a rerun that
recomputes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from snowfire.compare import CompareConfig
from snowfire.compare.interval import bootstrap
from snowfire.tasks import read_predictions
from tests.helpers.tasks import write_sst2, write_stsb

ARMS = ["adapter", "lora", "bitfit", "l2sp", "lpft", "seq"]


@pytest.fixture(scope="module")
def arms_run(tiny_bert_dir, tmp_path_factory):
    from snowfire.cli.main import main as snowfire

    root = tmp_path_factory.mktemp("arms")
    data = root / "data"
    write_stsb(data, sizes=(("train", 96), ("dev", 10), ("test", 10)))  # 3 batches an epoch
    write_sst2(data)
    out = root / "cmp"
    argv = [
        "compare",
        "--encoder",
        f"hf:{tiny_bert_dir}",
        "--tasks",
        "stsb",
        "--data",
        str(data),
        "--out",
        str(out),
        "--budget",
        "quick",
        "--heads",
        "linear",
        "--seeds",
        "2",
        "--arms",
        ",".join(ARMS),
        "--intermediate",
        "sst2",
        "--quiet",
    ]
    assert snowfire(argv) == 0
    return out, data, argv


def test_every_arm_runs_its_cells_and_is_weighed_against_both_poles(arms_run):
    out, _, _ = arms_run
    results = json.loads((out / "results.json").read_text())
    cells = results["cells"]
    for arm in ARMS:
        mine = [c for c in cells if c["mode"] == arm]
        assert [c["seed"] for c in mine] == [0, 1]
        for c in mine:
            assert Path(c["run"]) == out / arm / "stsb" / f"seed{c['seed']}"
    s = results["tasks"]["stsb"]
    v = s["verdict"]
    assert set(v["arms"]) == set(ARMS)
    # the arm's Δ against ❄️ and 🔥 is the same bootstrap's (recomputed from the predictions)
    split = v["split"]

    def preds(mode):
        runs = [c for c in cells if c["mode"] == mode and (mode != "snow" or c["head"] == "linear")]
        return [
            read_predictions(Path(c["run"]) / "predictions" / f"{split}.tsv", "regression")
            for c in runs
        ]

    gold = preds("fire")[0][0]
    sides = {m: [p for _, p in preds(m)] for m in ["snow", "fire"]}
    base = results["baselines"]["stsb"]["predictions"][split]
    sides["baseline"] = [base]
    sides |= {a: [p for _, p in preds(a)] for a in ARMS}
    boot = bootstrap("pearson", gold, sides)
    for arm in ARMS:
        a = v["arms"][arm]
        assert a["score"] == pytest.approx(boot.point[arm])
        for side in ("snow", "fire"):
            want = boot.interval(side, arm)
            got = a[f"vs_{side}"]
            assert got["delta"] == pytest.approx(want.estimate)
            assert (got["low"], got["high"]) == pytest.approx((want.low, want.high))
        assert len(a["curves"]) == 2 and isinstance(a["converged"], bool)
        # every fine-tuning cell's curve has points within its epochs too (curve_points 2)
        assert any(x % 1 for x, _ in a["curves"][0]["curve"])
    assert any(x % 1 for x, _ in v["curves"]["fire"][0]["curve"])
    assert all(x % 1 == 0 for x, _ in v["curves"]["snow"][0]["curve"])
    # cost per arm: the partial methods train and keep a small share of 🔥
    cost = s["cost"]
    for arm in ("adapter", "lora", "bitfit"):
        assert 0 < cost[arm]["params"] < cost["fire"]["params"]
        assert 0 < cost[arm]["saved_bytes"] < cost["fire"]["saved_bytes"]
        assert cost[arm]["peak_rss_mb"] > 0 and cost[arm]["seconds"] > 0
    for arm in ("l2sp", "lpft", "seq"):  # full fine-tuning, started or pulled otherwise
        assert cost[arm]["params"] == cost["fire"]["params"]
    # time is the seeds' mean, peak memory their highest (not seed 0's alone)
    runs = [
        json.loads((out / "adapter" / "stsb" / f"seed{i}" / "config.json").read_text())
        for i in (0, 1)
    ]
    assert cost["adapter"]["seeds"] == 2
    assert cost["adapter"]["seconds"] == pytest.approx(sum(r["seconds"] for r in runs) / 2)
    assert cost["adapter"]["peak_rss_mb"] == max(r["cost"]["peak_rss_mb"] for r in runs)


def test_the_arms_table_and_the_cost_plot(arms_run):
    out, _, _ = arms_run
    table = (out / "table.md").read_text()
    for words in ("adapters (Houlsby)", "LoRA", "BitFit", "🔥 + L2-SP", "LP-FT", "sequential 🔥"):
        assert f"| stsb | {words} |" in table
        assert f"(ours) | {words} | dev |" in table
    assert "![stsb: score against cost](cost-stsb.png)" in table
    assert (out / "cost-stsb.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # two seeds a side here; with one, the table says its intervals hold no restart spread
    from types import SimpleNamespace

    from snowfire.compare.arms_report import arm_lines

    caveat = "One seed per arm"
    assert caveat not in table
    summary = json.loads((out / "results.json").read_text())["tasks"]
    one = SimpleNamespace(arms=ARMS + ["snow", "fire"], seeds_fire=1)
    assert any(line.startswith(caveat) for line in arm_lines(one, summary))
    # every cell trained in a process of its own: no peak is marked as holding another's
    from snowfire.compare.arms_report import SHARED_PEAK

    runs = out.glob("*/stsb/**/seed[0-9]/config.json")  # not a saved encoder's config.json
    costs = [json.loads(p.read_text())["cost"] for p in runs]
    assert len(costs) >= 2 * (len(ARMS) + 2) and all(c["peak_rss_own"] for c in costs)
    assert SHARED_PEAK not in table and " † |" not in table
    summary["stsb"]["cost"]["lora"]["peak_rss_own"] = False  # as --no-cell-processes records
    lines = arm_lines(one, summary)
    (lora,) = [line for line in lines if line.startswith("| stsb | LoRA |")]
    peak = summary["stsb"]["cost"]["lora"]["peak_rss_mb"]
    assert lora.endswith((f"| {peak} † | yes |", f"| {peak} † | no |"))
    assert SHARED_PEAK in lines
    assert sum(" † |" in line for line in lines) == 1


def test_lpft_starts_from_its_probe_and_seq_from_the_intermediate(arms_run):
    out, _, _ = arms_run
    for seed in (0, 1):
        lpft = json.loads((out / "lpft" / "stsb" / f"seed{seed}" / "config.json").read_text())
        probe = out / "snow" / "stsb" / "probe-cls" / f"seed{seed}"
        assert lpft["finetune"]["init_head"] == str(probe)
        assert json.loads((probe / "head.json").read_text())["head"]["pool"] == "cls"
        seq = json.loads((out / "seq" / "stsb" / f"seed{seed}" / "config.json").read_text())
        assert seq["finetune"]["encoder"] == f"hf:{out / 'intermediate' / 'sst2' / 'seed0'}/encoder"
    assert (out / "intermediate" / "sst2" / "seed0" / "metrics.json").is_file()


def test_predict_works_on_every_arms_saved_run(arms_run, tmp_path):
    from snowfire import predict
    from snowfire.heads import PredictConfig

    out, _, _ = arms_run
    texts = tmp_path / "pairs.jsonl"
    texts.write_text(
        '{"text_a": "a dog runs", "text_b": "a dog is running"}\n'
        '{"text_a": "the man sings", "text_b": "a cat sleeps"}\n'
    )
    for arm in ["fire", *ARMS]:
        got = predict(
            PredictConfig(
                run=str(out / arm / "stsb" / "seed0"),
                input=str(texts),
                out=str(tmp_path / f"{arm}.tsv"),
            )
        ).predictions
        assert len(got) == 2 and all(isinstance(x, float) for x in got)


def test_a_rerun_recomputes_nothing(arms_run, capsys):
    from snowfire.cli.main import main as snowfire

    out, _, argv = arms_run
    before = {p: p.stat().st_mtime_ns for p in out.rglob("metrics.json")}
    assert snowfire(argv) == 0
    assert {p: p.stat().st_mtime_ns for p in out.rglob("metrics.json")} == before


def test_arms_are_checked_when_configured():
    with pytest.raises(ValueError, match="unknown \\['lorax'\\]"):
        CompareConfig(encoder="minilm", tasks=["stsb"], data="d", out="o", arms=["lorax"])
    with pytest.raises(ValueError, match="arm seq needs"):
        CompareConfig(encoder="minilm", tasks=["stsb"], data="d", out="o", arms=["seq"])
    with pytest.raises(ValueError, match="are for BERT-family encoders"):
        CompareConfig(
            encoder="elmo:o.json,w.hdf5", tasks=["stsb"], data="d", out="o", arms=["lora"]
        )
    tagging = CompareConfig(encoder="minilm", tasks=["conll2003"], data="d", out="o", arms=["lpft"])
    assert tagging.arms == ["snow", "fire", "lpft"]  # its probe reads the words (compare/arms.py)
    cfg = CompareConfig(encoder="minilm", tasks=["stsb"], data="d", out="o", arms=["lora,snow"])
    assert cfg.arms == ["snow", "fire", "lora"]


def test_seq_runs_from_an_intermediate_trained_again_are_refused_or_kept(arms_run, capsys):
    """Trained again (on another machine the CPU kernels change the last bits), the intermediate
    run holds other weights than the finished seq runs started from: compare refuses them by
    name; with --keep-remade-starts it keeps them, trains nothing, and says in results.json and
    table.md which start they came from and what the intermediate holds now."""
    from safetensors.torch import load_file, save_file

    from snowfire.cli.main import main as snowfire
    from snowfire.extractor import weights_sha256

    out, _, argv = arms_run
    encoder = out / "intermediate" / "sst2" / "seed0" / "encoder"
    runs = [out / "seq" / "stsb" / f"seed{seed}" for seed in (0, 1)]
    started = {
        json.loads((r / "config.json").read_text())["start"]["encoder_weights_sha256"] for r in runs
    }
    assert started == {weights_sha256(encoder)}
    files = {p: p.read_bytes() for p in encoder.glob("*.safetensors")}
    before = {p: p.stat().st_mtime_ns for p in out.rglob("metrics.json")}
    try:
        for path in files:  # the intermediate "trained again": every weight moved
            save_file({k: v + 0.5 for k, v in load_file(path).items()}, path, {"format": "pt"})
        now = weights_sha256(encoder)
        capsys.readouterr()
        assert snowfire(argv) == 2
        said = capsys.readouterr().err
        assert f"{runs[0]} holds a finished run from other starting weights" in said
        assert f"encoder_weights_sha256: saved {started.pop()}, now {now}" in said
        assert snowfire([*argv, "--keep-remade-starts"]) == 0
        assert {p: p.stat().st_mtime_ns for p in out.rglob("metrics.json")} == before
        results = json.loads((out / "results.json").read_text())
        old = json.loads((runs[0] / "config.json").read_text())["start"]["encoder_weights_sha256"]
        assert results["tasks"]["stsb"]["starts"]["seq"] == {
            "runs": 2,
            "recorded": {old: 2},
            "now": {now: 2},
            "remade": 2,
        }
        assert results["tasks"]["stsb"]["starts"]["lpft"]["remade"] == 0  # its probes unchanged
        table = (out / "table.md").read_text()
        assert (
            f"- **stsb**, arm seq: its 2 finished runs started from the intermediate run's "
            f"encoder with encoder_weights_sha256 {old[:12]}… (2); those paths hold {now[:12]}… "
            "(2) now: 2 runs started from weights trained again since, kept with the start they "
            "recorded (--keep-remade-starts)." in table
        )
        assert "arm lpft: its" not in table  # nothing to say where every start is the same
    finally:
        for path, data in files.items():
            path.write_bytes(data)
        assert snowfire(argv) == 0  # as the module's other tests expect it
