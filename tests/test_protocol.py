"""The honest protocol in both trainers (tasks/selection.py): every choice is made on the
selection split, so a run with the report split's labels permuted makes the same choices (the
same epochs, the same weights) and only its reported score differs; a run paused at an epoch
(a rung of paired racing) and continued ends as one that never paused; a run ended early says
where."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from snowfire.cli.main import main as run_cli
from tests.helpers.tasks import finetune_config, permute_labels, write_sst2


@pytest.fixture(scope="module")
def two_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("protocol")
    data = write_sst2(root / "data", sizes=(("train", 60), ("dev", 20)))
    return data, permute_labels(data, root / "permuted")


@pytest.fixture(scope="module")
def stores(tiny_bert_dir, two_data, tmp_path_factory):
    """A store per data folder (a store keeps one feature set per task split: the latest file)."""
    out = []
    for i, data in enumerate(two_data):
        store = tmp_path_factory.mktemp("store") / f"s{i}"
        argv = ["extract", "--encoder", f"hf:{tiny_bert_dir}", "--task", "sst2"]
        assert run_cli([*argv, "--data", str(data), "--store", str(store), "--quiet"]) == 0
        out.append(store)
    return out


def _predicted(run, split="dev"):
    """(gold, predicted) columns of RUN/predictions/<split>.tsv."""
    rows = [r.split("\t") for r in (run / "predictions" / f"{split}.tsv").read_text().splitlines()]
    return [r[1] for r in rows[1:]], [r[2] for r in rows[1:]]


def _train(tiny_bert_dir, data, store, out, *extra):
    argv = ["train", "--store", str(store), "--encoder", f"hf:{tiny_bert_dir}", "--task", "sst2"]
    argv += ["--head", "linear", "--data", str(data), "--out", str(out), "--quiet"]
    argv += ["--epochs", "4", "--patience", "4", "--lr", "0.01", *extra]
    assert run_cli(argv) == 0
    return out


def _log(run):
    return [
        {k: v for k, v in json.loads(line).items() if k != "seconds"}
        for line in (run / "log.jsonl").read_text().splitlines()
    ]


def test_snow_chooses_the_same_with_the_report_labels_permuted(
    tiny_bert_dir, two_data, stores, tmp_path
):
    runs = [
        _train(tiny_bert_dir, d, s, tmp_path / f"r{i}")
        for i, (d, s) in enumerate(zip(two_data, stores, strict=True))
    ]
    a, b = (json.loads((r / "config.json").read_text()) for r in runs)
    assert a["roles"] == {"selection": "select", "report": "dev", "carved": True}
    assert a["best_epoch"] == b["best_epoch"] and _log(runs[0]) == _log(runs[1])
    wa, wb = (load_file(r / "weights.safetensors") for r in runs)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    ma, mb = (json.loads((r / "metrics.json").read_text()) for r in runs)
    assert ma["select"] == mb["select"] and ma["train"] == mb["train"]
    (gold_a, pred_a), (gold_b, pred_b) = (_predicted(r) for r in runs)
    assert pred_a == pred_b and gold_a != gold_b  # only what is reported against differs
    picked = (runs[0] / "selection" / f"epoch-{a['best_epoch']}.tsv").read_text()
    assert picked.splitlines()[0] == "index\tgold\tpredicted"  # each epoch's choice evidence


def test_fire_chooses_the_same_with_the_report_labels_permuted(tiny_bert_dir, two_data, tmp_path):
    from snowfire.finetune import train

    metrics = []
    for i, data in enumerate(two_data):
        cfg = finetune_config(f"hf:{tiny_bert_dir}", "sst2", data, tmp_path / f"f{i}", epochs=2)
        metrics.append(train(cfg))
    assert _log(tmp_path / "f0") == _log(tmp_path / "f1")  # the same choices, epoch by epoch
    wa, wb = (torch.load(tmp_path / f"f{i}" / "best.pt", weights_only=True) for i in (0, 1))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert metrics[0]["select"] == metrics[1]["select"]
    (gold_a, pred_a), (gold_b, pred_b) = (_predicted(tmp_path / f"f{i}") for i in (0, 1))
    assert pred_a == pred_b and gold_a != gold_b


def test_a_paused_snow_run_continues_to_the_same_end(tiny_bert_dir, two_data, stores, tmp_path):
    data, store = two_data[0], stores[0]
    whole = _train(tiny_bert_dir, data, store, tmp_path / "whole")
    run = tmp_path / "paused"
    _train(tiny_bert_dir, data, store, run, "--pause-at", "2")
    paused = json.loads((run / "paused.json").read_text())
    assert paused["epoch"] == 2 and not (run / "metrics.json").exists()
    assert (run / "checkpoint.pt").is_file() and len(_log(run)) == 2
    _train(tiny_bert_dir, data, store, run)  # the same config, no pause: continues
    assert not (run / "checkpoint.pt").exists() and not (run / "paused.json").exists()
    assert _log(run) == _log(whole)
    assert json.loads((run / "metrics.json").read_text()) == json.loads(
        (whole / "metrics.json").read_text()
    )
    wa, wb = (load_file(r / "weights.safetensors") for r in (run, whole))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_a_paused_snow_run_a_race_stops_ends_from_its_pause_record(
    tiny_bert_dir, two_data, stores, tmp_path
):
    """❄️ as 🔥 (below): paused at 2, the end a stop there gives is kept in RUN/at-pause/; with
    the checkpoint and weights gone (another machine), a stop at 2 ends the run from it, the
    same metrics, predictions and head records as a run stopped at 2, nothing trained."""
    data, store = two_data[0], stores[0]
    stopped = _train(tiny_bert_dir, data, store, tmp_path / "s", "--stop-at", "2")
    run = _train(tiny_bert_dir, data, store, tmp_path / "p", "--pause-at", "2")
    assert (run / "at-pause" / "metrics.json").is_file() and not (run / "metrics.json").exists()
    for gone in ("checkpoint.pt", "at-pause/weights.safetensors"):
        (run / gone).unlink()
    log = (run / "log.jsonl").read_text()
    _train(tiny_bert_dir, data, store, run, "--stop-at", "2")
    assert (run / "log.jsonl").read_text() == log  # not an epoch trained
    for name in ("metrics.json", "scalar_mix.json", "head.json", *_tables(stopped)):
        assert (run / name).read_text() == (stopped / name).read_text(), name
    config = json.loads((run / "config.json").read_text())
    assert config["finished_from"] == "at-pause" and config["stopped_at"] == 2
    assert config["train"]["stop_at"] == 2 and config["train"]["pause_at"] is None
    assert not (run / "at-pause").exists() and not (run / "weights.safetensors").exists()
    # on the machine that paused it, the weights come too
    here = _train(tiny_bert_dir, data, store, tmp_path / "h", "--pause-at", "2")
    _train(tiny_bert_dir, data, store, here, "--stop-at", "2")
    wa, wb = (load_file(r / "weights.safetensors") for r in (here, stopped))
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


def _tables(run):
    return [f"predictions/{p.name}" for p in sorted((run / "predictions").iterdir())]


def test_a_stopped_snow_run_finishes_early_and_says_so(tiny_bert_dir, two_data, stores, tmp_path):
    run = _train(tiny_bert_dir, two_data[0], stores[0], tmp_path / "s", "--stop-at", "2")
    config = json.loads((run / "config.json").read_text())
    assert config["stopped_at"] == 2 and config["epochs_run"] == 2 and len(_log(run)) == 2
    # a stopped run has lost: it scores the splits that choose and report, not train
    assert {"select", "dev"} == set(json.loads((run / "metrics.json").read_text()))
    assert sorted(p.name for p in (run / "predictions").iterdir()) == ["dev.tsv", "select.tsv"]
    whole = _train(tiny_bert_dir, two_data[0], stores[0], tmp_path / "w")  # a finished run does
    assert {"train", "select", "dev"} == set(json.loads((whole / "metrics.json").read_text()))
    # its time counts the final scoring too, split by split, as a 🔥 run's does
    assert set(config["scoring_seconds"]) == {"select", "dev"}
    done = json.loads((whole / "config.json").read_text())
    assert set(done["scoring_seconds"]) == {"train", "select", "dev"}
    last = json.loads((whole / "log.jsonl").read_text().splitlines()[-1])["seconds"]
    scored = sum(done["scoring_seconds"].values())  # after the last epoch's line, as 🔥's
    assert last + scored - 0.02 <= done["seconds"] <= last + scored + 1.0


def test_a_paused_fire_run_continues_to_the_same_end(tiny_bert_dir, two_data, tmp_path):
    from dataclasses import replace

    from snowfire.finetune import train

    data = two_data[0]
    whole = train(finetune_config(f"hf:{tiny_bert_dir}", "sst2", data, tmp_path / "w", epochs=3))
    cfg = finetune_config(f"hf:{tiny_bert_dir}", "sst2", data, tmp_path / "p", epochs=3)
    assert train(replace(cfg, pause_at=1)) == {}
    paused = json.loads((tmp_path / "p" / "paused.json").read_text())
    assert paused["epoch"] == 1 and paused["best_epoch"] == 1 and paused["split"] == "select"
    assert train(replace(cfg, pause_at=2)) == {}  # the next rung
    assert json.loads((tmp_path / "p" / "paused.json").read_text())["epoch"] == 2
    assert train(cfg) == whole
    wa, wb = (torch.load(tmp_path / d / "best.pt", weights_only=True) for d in ("w", "p"))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    stopped = train(replace(cfg, out=str(tmp_path / "s"), stop_at=1))
    config = json.loads((tmp_path / "s" / "config.json").read_text())
    assert config["stopped_at"] == 1 and config["epochs_run"] == 1 and "dev" in stopped
    assert set(stopped) == {"select", "dev"} and set(whole) == {"train", "select", "dev"}
    assert not (tmp_path / "s" / "predictions" / "train.tsv").exists()
    assert set(config["scoring_seconds"]) == {"select", "dev"}  # each split's final scoring
    finished = json.loads((tmp_path / "w" / "config.json").read_text())["scoring_seconds"]
    assert set(finished) == {"train", "select", "dev"} and all(v >= 0 for v in finished.values())


def test_a_paused_fire_run_a_race_stops_ends_from_its_pause_record(
    tiny_bert_dir, two_data, tmp_path
):
    """Paused at epoch 1, the run keeps the end a stop there gives (RUN/at-pause/); stopped
    at 1 with its checkpoint and weights gone (another machine), it ends from that record:
    nothing trained or scored again, the same metrics and predictions as a run stopped at 1."""
    from dataclasses import replace

    from snowfire.finetune import train

    data = two_data[0]
    cfg = finetune_config(f"hf:{tiny_bert_dir}", "sst2", data, tmp_path / "p", epochs=3)
    stopped = train(replace(cfg, out=str(tmp_path / "s"), stop_at=1))
    assert train(replace(cfg, pause_at=1)) == {}
    run = tmp_path / "p"
    end = json.loads((run / "at-pause" / "config.json").read_text())
    assert json.loads((run / "at-pause" / "metrics.json").read_text()) == stopped
    assert end["stopped_at"] == 1 and not (run / "metrics.json").exists()
    assert sorted(p.name for p in (run / "at-pause" / "predictions").iterdir()) == [
        "dev.tsv",
        "select.tsv",
    ]
    assert not (run / "predictions" / "dev.tsv").exists()  # the run is not finished
    for gone in ("checkpoint.pt", "best.pt"):
        (run / gone).unlink()
    log = (run / "log.jsonl").read_text()
    steps: list[int] = []
    ended = train(replace(cfg, stop_at=1), on_step=lambda step, model: steps.append(step))
    assert ended == stopped and steps == []  # not a batch trained
    assert (run / "log.jsonl").read_text() == log
    for split in ("dev", "select"):
        mine, theirs = (d / "predictions" / f"{split}.tsv" for d in (run, tmp_path / "s"))
        assert mine.read_text() == theirs.read_text()
    config = json.loads((run / "config.json").read_text())
    assert config["finished_from"] == "at-pause" and config["stopped_at"] == 1
    assert config["finetune"]["stop_at"] == 1 and config["finetune"]["pause_at"] is None
    assert config["seconds"] >= config["scoring_seconds"]["dev"] > 0
    assert not (run / "at-pause").exists() and not (run / "paused.json").exists()
    assert not (run / "encoder").exists()  # no weights here to write it from
    assert train(replace(cfg, stop_at=1)) == stopped  # finished: returned as it is


def test_a_paused_fire_run_the_race_keeps_goes_on_or_trains_again(
    tiny_bert_dir, two_data, tmp_path
):
    """The pause record serves only a stop where the run paused: on the same machine a stop
    there ends from it (the encoder written from best.pt); a run that goes on drops it, and
    without its checkpoint trains again from scratch to the same end."""
    from dataclasses import replace

    from snowfire.finetune import train

    data = two_data[0]
    base = finetune_config(f"hf:{tiny_bert_dir}", "sst2", data, tmp_path / "w", epochs=2)
    whole = train(base)
    here = replace(base, out=str(tmp_path / "h"))
    assert train(replace(here, pause_at=1)) == {}
    assert train(replace(here, stop_at=1)) != {}
    assert (tmp_path / "h" / "encoder").is_dir()  # method full, its weights at hand
    again = replace(base, out=str(tmp_path / "a"))
    assert train(replace(again, pause_at=1)) == {}
    (tmp_path / "a" / "checkpoint.pt").unlink()  # another machine: the record alone came
    assert train(again) == whole  # kept by the race: trained again, to the same end
    assert not (tmp_path / "a" / "at-pause").exists()
