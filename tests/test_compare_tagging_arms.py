"""The arms on a tagging task (issue 48): `compare --arms` on a tiny CoNLL-2003 beside SST-2 runs
every arm (adapters, LoRA, BitFit, L2-SP, LP-FT from a probe of each word's first piece,
sequential), each arm's saved run reloads through `snowfire predict` and tags every word of a
text it never saw; sequential 🔥 is left out of the task it fine-tuned on first, saying why."""

from __future__ import annotations

import json

import pytest

from snowfire.compare import CompareConfig
from tests.helpers.tasks import write_conll, write_sst2

pytestmark = pytest.mark.slow

ARMS = ["adapter", "lora", "bitfit", "l2sp", "lpft", "seq"]


@pytest.fixture(scope="module")
def tagging_run(tiny_bert_dir, tmp_path_factory):
    from snowfire.cli.main import main as snowfire

    root = tmp_path_factory.mktemp("tagarms")
    data = root / "data"
    write_conll(data, sizes=(("train", 60), ("dev", 10), ("test", 10)))
    write_sst2(data)
    out = root / "cmp"
    argv = [
        *("compare", "--encoder", f"hf:{tiny_bert_dir}", "--tasks", "conll2003,sst2"),
        *("--data", str(data), "--out", str(out), "--budget", "quick"),
        *("--seeds", "1", "--arms", ",".join(ARMS), "--intermediate", "sst2"),
        "--quiet",
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


def test_an_arm_that_does_not_apply_to_a_task_is_left_out_saying_why(tagging_run):
    """Beside SST-2, lpft runs on both, each from the probe of what 🔥 reads there ([CLS] on
    SST-2, each word's first piece on CoNLL-2003); seq, fine-tuned on SST-2 first, runs on
    CoNLL-2003 alone: results.json and table.md say why, per task."""
    results = json.loads((tagging_run / "results.json").read_text())
    ran = {(c["mode"], c["task"]) for c in results["cells"]}
    assert {("lpft", "sst2"), ("lpft", "conll2003")} <= ran
    assert ("seq", "conll2003") in ran and ("seq", "sst2") not in ran
    tasks = results["tasks"]
    assert not tasks["conll2003"]["not_run"] and "lpft" in tasks["conll2003"]["arms"]
    assert list(tasks["sst2"]["not_run"]) == ["seq"] and "lpft" in tasks["sst2"]["arms"]
    table = (tagging_run / "table.md").read_text()
    assert "on conll2003: not run" not in table
    assert "- sequential 🔥 on sst2: not run; its first stage is sst2 itself" in table
    for task, pool in (("conll2003", "word"), ("sst2", "cls")):
        probe = tagging_run / "snow" / task / f"probe-{pool}" / "seed0"
        head = json.loads((probe / "head.json").read_text())
        assert head["head"]["pool"] == pool, (task, head["head"])
        config = json.loads((tagging_run / "lpft" / task / "seed0" / "config.json").read_text())
        assert config["finetune"]["init_head"].endswith(f"probe-{pool}/seed0"), config


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


@pytest.mark.parametrize("trials", [None, 2])
def test_beside_other_tasks_an_arm_that_does_not_apply_is_left_out_of_its_task(trials):
    """The paper's seven tasks in one command: lpft runs on every task, from a probe of what
    🔥 reads there; seq runs on every task but the one it fine-tuned on first."""
    from snowfire.compare.arms import why_not
    from snowfire.compare.run import plan

    cfg = CompareConfig(
        encoder="minilm",
        tasks=["conll2003", "sst2", "mnli"],
        data="d",
        out="o",
        arms=["lpft,seq"],
        intermediate="mnli",
        seeds=1,
        trials=trials,
    )
    cells = plan(cfg)
    ran = {(c.mode.value, c.task) for c in cells}
    assert {("lpft", t) for t in cfg.names} | {("probe", t) for t in cfg.names} <= ran
    assert ("seq", "mnli") not in ran and {("seq", "sst2"), ("seq", "conll2003")} <= ran
    assert {("fire", t) for t in cfg.names} | {("snow", t) for t in cfg.names} <= ran
    probes = {c.task: c.run for c in cells if c.mode.value == "probe"}
    assert "/snow/conll2003/probe-word/" in probes["conll2003"] + "/"
    assert "/snow/sst2/probe-cls/" in probes["sst2"] + "/"
    assert why_not("lpft", "conll2003", "tagging", "mnli") is None
    assert "mnli itself" in (why_not("seq", "mnli", "classification", "mnli") or "")
    assert why_not("lpft", "sst2", "classification", "mnli") is None
