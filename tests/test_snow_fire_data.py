"""❄️ and 🔥 read a task through one path (tasks/training.py, tasks/targets.py, tasks/batches.py),
so that a comparison is fair: the same class index for the same label, the same training
subsample for a cap and a seed, and (random batches, bucket_pool 0) the same example order in
every epoch. Checked through the two trainers themselves; the indices against a hand count."""

from __future__ import annotations

import pytest

import snowfire.finetune.epoch as fire_epoch
from snowfire.extractor import ExtractConfig, run_extract
from snowfire.finetune import FinetuneConfig, build_model
from snowfire.finetune import train as finetune
from snowfire.heads import FeatureSource, TrainConfig
from snowfire.heads import train as train_head
from snowfire.tasks import get_task, read_split, read_training, task_targets

SEED, CAP = 3, 9


@pytest.mark.parametrize("task", ["sst2", "stsb", "conll2003"])
def test_both_sides_learn_the_same_index_for_each_label(tiny_bert_dir, data_dir, tmp_path, task):
    spec = get_task(task)
    examples = read_split(spec, data_dir, "train")
    snow = task_targets(spec, examples)  # what a head trains on
    cfg = FinetuneConfig(
        encoder=f"hf:{tiny_bert_dir}", task=task, data=str(data_dir), out=str(tmp_path)
    )
    model, _ = build_model(cfg, spec)
    fire = model.collate(examples)["labels"]  # what the 🔥 model trains on: (B,) | (B, T)
    if spec.kind == "regression":  # the scores themselves, as float32 on both sides
        by_hand = [float(e.label) for e in examples]
        assert snow.tolist() == fire.tolist() == pytest.approx(by_hand, abs=1e-6)
        return
    if spec.kind == "classification":
        by_hand = [spec.labels.index(str(e.label)) for e in examples]
        assert len(set(by_hand)) == 2  # both classes, so a swapped mapping would show
        assert snow.tolist() == fire.tolist() == by_hand
        return
    for b, e in enumerate(examples):
        by_hand = [spec.labels.index(t) for t in e.tags]
        assert snow[b].tolist() == fire[b, : len(e.tags)].tolist() == by_hand
        assert (fire[b, len(e.tags) :] < 0).all()  # padding: ignored by the loss
    assert len({i for t in snow for i in t.tolist()}) >= 2  # a swapped mapping would show


@pytest.fixture(scope="module")
def store(tiny_bert_dir, data_dir, tmp_path_factory) -> str:
    store = str(tmp_path_factory.mktemp("store") / "s")
    run_extract(
        ExtractConfig(encoder=f"hf:{tiny_bert_dir}", task="sst2", data=str(data_dir), store=store)
    )
    return store


def _indices(predictions) -> list[int]:
    """The example indices of a run's predictions/train.tsv: the examples it trained on."""
    return [int(line.split("\t")[0]) for line in predictions.read_text().splitlines()[1:]]


def test_a_capped_comparison_trains_both_sides_on_the_same_examples_in_the_same_order(
    tiny_bert_dir, data_dir, store, tmp_path, monkeypatch
):
    encoder, data = f"hf:{tiny_bert_dir}", str(data_dir)
    keep = read_training("sst2", data, cap=CAP, seed=SEED).keep
    assert len(keep) == CAP and keep != read_training("sst2", data, cap=CAP, seed=SEED + 1).keep
    snow_epochs, fire_epochs = [], []
    iterate = FeatureSource.iterate

    def snow_iterate(self, batch_size, rng=None, pool=0):  # ❄️: feature-set example numbers
        batches = list(iterate(self, batch_size, rng, pool))
        if rng is not None:  # a training epoch (scoring reads in order, without one)
            snow_epochs.append([idx for idx, _ in batches])
        yield from batches

    def fire_batches(*args):  # 🔥: positions in its (capped) training examples
        batches = epoch_batches(*args)
        fire_epochs.append([[keep[p] for p in batch.tolist()] for batch in batches])
        return batches

    epoch_batches = fire_epoch.epoch_batches
    monkeypatch.setattr(FeatureSource, "iterate", snow_iterate)
    monkeypatch.setattr(fire_epoch, "epoch_batches", fire_batches)
    same = dict(seed=SEED, epochs=2, patience=5, batch_size=4, bucket_pool=0, progress=False)
    same |= dict(task="sst2", data=data, max_train_examples=CAP)
    train_head(
        TrainConfig(store=store, encoder=encoder, head="linear", out=str(tmp_path / "s"), **same)
    )
    finetune(FinetuneConfig(encoder=encoder, out=str(tmp_path / "f"), **same))
    assert len(snow_epochs) == len(fire_epochs) == 2
    assert snow_epochs == fire_epochs  # batch by batch, epoch by epoch
    assert snow_epochs[0] != snow_epochs[1]  # each epoch its own order
    assert sorted(i for batch in snow_epochs[0] for i in batch) == keep
    for run in ("s", "f"):
        assert _indices(tmp_path / run / "predictions" / "train.tsv") == keep
