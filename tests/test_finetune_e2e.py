"""🔥 end to end with the tiny random BERT: one run per task kind on tiny data files written in
the tasks' real formats; the run directory is complete, metrics.json equals the metrics
recomputed from the prediction files, and the saved encoder extracts the fine-tuned states.

The data writers and `check_run` here are shared by the other test_finetune_* modules.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from tasks import evaluate, get_task, read_split
from tests.conftest import WORDS

TINY_WORDS = WORDS[:40]
PER, LOC = {"man", "woman", "people", "someone"}, {"park", "street"}


def _sentence(rng: random.Random, low: int = 3, high: int = 9) -> str:
    return " ".join(rng.choice(TINY_WORDS) for _ in range(rng.randint(low, high)))


def write_sst2(root: Path, sizes=(("train", 40), ("dev", 12), ("test", 12))) -> Path:
    """GLUE SST-2 layout: header `sentence<TAB>label`; label 1 when the sentence has "good"."""
    rng = random.Random(0)
    (root / "sst2").mkdir(parents=True, exist_ok=True)
    for split, n in sizes:
        lines = ["sentence\tlabel"]
        for _ in range(n):
            s = _sentence(rng)
            lines.append(f"{s}\t{int('good' in s.split() or 'great' in s.split())}")
        (root / "sst2" / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    return root


def write_stsb(root: Path, sizes=(("train", 32), ("dev", 10), ("test", 10))) -> Path:
    """STS-B release layout: 7 tab-separated fields, no header; score = 5 x word overlap."""
    rng = random.Random(1)
    (root / "stsb").mkdir(parents=True, exist_ok=True)
    for split, n in sizes:
        lines = []
        for i in range(n):
            a = _sentence(rng).split()
            b = a[: rng.randint(1, len(a))] + _sentence(rng, 1, 4).split()
            score = 5.0 * len(set(a) & set(b)) / len(set(a) | set(b))
            lines.append(
                f"main-captions\tMSRvid\t2012test\t{i:04d}\t{score:.3f}\t{' '.join(a)}\t"
                f"{' '.join(b)}"
            )
        name = {"train": "sts-train.csv", "dev": "sts-dev.csv", "test": "sts-test.csv"}[split]
        (root / "stsb" / name).write_text("\n".join(lines) + "\n")
    return root


def write_conll(root: Path, sizes=(("train", 30), ("dev", 10), ("test", 10))) -> Path:
    """CoNLL-2003 layout: `token POS chunk NER`, -DOCSTART- lines, IOB1 tags."""
    rng = random.Random(2)
    (root / "conll2003").mkdir(parents=True, exist_ok=True)
    for split, n in sizes:
        lines = ["-DOCSTART- -X- O O", ""]
        vocab = list(TINY_WORDS[:20]) + sorted(PER | LOC)
        for _ in range(n):
            for w in rng.choices(vocab, k=rng.randint(2, 8)):
                tag = "I-PER" if w in PER else "I-LOC" if w in LOC else "O"
                lines.append(f"{w} NN I-NP {tag}")
            lines.append("")
        name = {"train": "eng.train", "dev": "eng.testa", "test": "eng.testb"}[split]
        (root / "conll2003" / name).write_text("\n".join(lines) + "\n")
    return root


WRITERS = {"sst2": write_sst2, "stsb": write_stsb, "conll2003": write_conll}


def check_run(run: Path, task: str, data: Path, metrics: dict) -> None:
    """Every output of a run is there and metrics.json == metrics from the prediction files."""
    from finetune import read_predictions

    spec = get_task(task)
    for name in ("config.json", "metrics.json", "log.jsonl", "best.pt"):
        assert (run / name).is_file(), name
    assert not (run / "checkpoint.pt").exists()  # a finished run does not keep it
    saved = json.loads((run / "metrics.json").read_text())
    assert saved == metrics
    assert set(saved) == {"train", "dev", "test"}
    for split in ("train", "dev", "test"):
        gold, pred = read_predictions(run / "predictions" / f"{split}.tsv", spec.kind)
        examples = read_split(task, data, split)
        assert len(gold) == len(examples)
        assert evaluate(task, gold, pred) == saved[split]
        assert spec.metric in saved[split]
    config = json.loads((run / "config.json").read_text())
    assert config["finetune"]["task"] == task
    assert {"encoder", "versions", "seed", "layer_groups", "seconds"} <= set(config)
    assert config["versions"]["torch"] == torch.__version__
    log = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in log] == list(range(1, len(log) + 1))
    assert all(spec.metric in r["dev"] for r in log)


def _config(encoder: str, task: str, data: Path, out: Path, **kw):
    from finetune import FinetuneConfig

    defaults = dict(epochs=2, batch_size=8, lr=1e-3, progress=False, patience=5)
    return FinetuneConfig(
        encoder=encoder, task=task, data=str(data), out=str(out), **(defaults | kw)
    )


@pytest.mark.parametrize("task", ["sst2", "stsb", "conll2003"])
def test_bert_run_per_kind(tiny_bert_dir, tmp_path, task):
    from extractor import TextInput, load_encoder
    from finetune import build_model, train

    data = WRITERS[task](tmp_path / "data")
    cfg = _config(f"hf:{tiny_bert_dir}", task, data, tmp_path / "run")
    metrics = train(cfg)
    run = tmp_path / "run"
    check_run(run, task, data, metrics)
    assert (run / "encoder" / "config.json").is_file()

    # the saved encoder = the best fine-tuned weights: same hidden states in every layer
    model, _ = build_model(cfg, get_task(task))
    model.load_state_dict(torch.load(run / "best.pt", weights_only=True))
    model.eval()
    example = read_split(task, data, "dev")[0]
    text = TextInput(example.words_a, example.words_b)
    encoder = load_encoder(f"hf:{run / 'encoder'}", device="cpu")
    prepared = encoder.prepare(0, text)
    features = encoder.encode([prepared])[0].features  # (S, L, D)
    batch = model.collate([example])
    with torch.inference_mode():
        inputs = {k: v for k, v in batch.items() if k in ("input_ids", "token_type_ids")}
        hidden = model.encoder(**inputs, output_hidden_states=True).hidden_states
    ours = torch.stack(hidden, dim=2)[0].numpy()  # (S, L, D)
    assert ours.shape == features.shape
    np.testing.assert_allclose(features, ours, rtol=0, atol=1e-5)
    # and it moved away from the pretrained encoder
    pretrained = load_encoder(f"hf:{tiny_bert_dir}", device="cpu").encode([prepared])[0]
    assert not np.allclose(pretrained.features[:, -1], features[:, -1], atol=1e-4)


def test_unlabelled_test_split_gets_predictions_only(tiny_bert_dir, tmp_path):
    from finetune import train

    data = write_sst2(tmp_path / "data", sizes=(("train", 16), ("dev", 8)))
    (data / "sst2" / "test.tsv").write_text("index\tsentence\n0\tthe good film\n1\ta dog\n")
    metrics = train(_config(f"hf:{tiny_bert_dir}", "sst2", data, tmp_path / "run", epochs=1))
    assert set(metrics) == {"train", "dev"}
    rows = (tmp_path / "run" / "predictions" / "test.tsv").read_text().splitlines()
    assert rows[0] == "index\tgold\tpredicted" and len(rows) == 3
    assert rows[1].split("\t")[1] == ""


def test_max_train_examples_caps_the_training_set(tiny_bert_dir, tmp_path):
    from finetune import train

    data = write_sst2(tmp_path / "data")
    train(
        _config(
            f"hf:{tiny_bert_dir}", "sst2", data, tmp_path / "run", epochs=1, max_train_examples=10
        )
    )
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["num_examples"] == {"train": 10, "dev": 12, "test": 12}
    assert config["total_steps"] == 2
