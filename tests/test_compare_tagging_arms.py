"""The arms on a tagging task (issue 48): `compare --arms` on a tiny CoNLL-2003 runs every arm
that applies to tagging (adapters, LoRA, BitFit, L2-SP, sequential; LP-FT is refused by name:
its probe reads [CLS], not the words), each arm's saved run reloads through `snowfire predict`
and tags every word of a text it never saw."""

from __future__ import annotations

import json

import pytest

from snowfire.compare import CompareConfig
from tests.helpers.tasks import write_conll, write_sst2

pytestmark = pytest.mark.slow

ARMS = ["adapter", "lora", "bitfit", "l2sp", "seq"]


@pytest.fixture(scope="module")
def tagging_run(tiny_bert_dir, tmp_path_factory):
    from snowfire.cli.main import main as snowfire

    root = tmp_path_factory.mktemp("tagarms")
    data = root / "data"
    write_conll(data, sizes=(("train", 60), ("dev", 10), ("test", 10)))
    write_sst2(data)
    out = root / "cmp"
    argv = [
        *("compare", "--encoder", f"hf:{tiny_bert_dir}", "--tasks", "conll2003"),
        *("--data", str(data), "--out", str(out), "--budget", "quick", "--heads", "crf"),
        *("--seeds", "1", "--arms", ",".join(ARMS), "--intermediate", "sst2", "--quiet"),
    ]
    assert snowfire(argv) == 0
    return out


def test_every_tagging_arm_runs_and_is_weighed(tagging_run):
    results = json.loads((tagging_run / "results.json").read_text())
    modes = {c["mode"] for c in results["cells"]}
    assert set(ARMS) | {"snow", "fire"} <= modes
    summary = results["tasks"]["conll2003"]
    arms = summary["verdict"]["arms"]
    for arm in ARMS:
        metrics = json.loads(
            (tagging_run / arm / "conll2003" / "seed0" / "metrics.json").read_text()
        )
        assert 0.0 <= metrics["dev"]["span_f1"] <= 1.0, (arm, metrics)
        assert arm in arms, (arm, sorted(arms))
        assert {"vs_snow", "vs_fire"} <= set(arms[arm]), arms[arm]
    for arm in ("adapter", "lora", "bitfit"):  # they train and keep a share of 🔥
        assert 0 < summary["cost"][arm]["params"] < summary["cost"]["fire"]["params"]


def test_every_tagging_arms_run_reloads_through_predict(tagging_run, tmp_path):
    from snowfire import predict
    from snowfire.heads import PredictConfig

    texts = tmp_path / "sentences.txt"
    texts.write_text("Peter Blackburn went to Brussels\nthe EU rejects German call\n")
    for arm in ["fire", *ARMS]:
        got = predict(
            PredictConfig(
                run=str(tagging_run / arm / "conll2003" / "seed0"),
                input=str(texts),
                out=str(tmp_path / f"{arm}.tsv"),
            )
        ).predictions
        assert [len(tags) for tags in got] == [5, 5], (arm, got)
        assert all(isinstance(t, str) for tags in got for t in tags), (arm, got)


def test_lpft_says_why_it_does_not_apply_to_tagging():
    with pytest.raises(ValueError, match=r"lpft starts from a probe of \[CLS\], not for tagging"):
        CompareConfig(encoder="minilm", tasks=["conll2003"], data="d", out="o", arms=["lpft"])
