"""🔥 end to end with the tiny random BERT: one run per task kind on tiny data files written in
the tasks' real formats; the run directory is complete, metrics.json equals the metrics
recomputed from the prediction files, and the saved encoder extracts the fine-tuned states.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from snowfire.tasks import get_task, read_split
from tests.helpers.tasks import WRITERS, check_run, finetune_config, write_sst2


@pytest.mark.parametrize("task", ["sst2", "stsb", "conll2003"])
def test_bert_run_per_kind(tiny_bert_dir, tmp_path, task):
    from snowfire.extractor import TextInput, load_encoder
    from snowfire.finetune import build_model, train

    data = WRITERS[task](tmp_path / "data")
    cfg = finetune_config(f"hf:{tiny_bert_dir}", task, data, tmp_path / "run")
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
    from snowfire.finetune import train

    data = write_sst2(tmp_path / "data", sizes=(("train", 16), ("dev", 8)))
    (data / "sst2" / "test.tsv").write_text("index\tsentence\n0\tthe good film\n1\ta dog\n")
    metrics = train(
        finetune_config(f"hf:{tiny_bert_dir}", "sst2", data, tmp_path / "run", epochs=1)
    )
    # no labelled test: a slice of train selects, dev reports (tasks/selection.py)
    assert set(metrics) == {"train", "select", "dev"}
    rows = (tmp_path / "run" / "predictions" / "test.tsv").read_text().splitlines()
    assert rows[0] == "index\tgold\tpredicted" and len(rows) == 3
    assert rows[1].split("\t")[1] == ""


def test_max_train_examples_caps_the_training_set(tiny_bert_dir, tmp_path):
    from snowfire.finetune import train

    data = write_sst2(tmp_path / "data")
    train(
        finetune_config(
            f"hf:{tiny_bert_dir}", "sst2", data, tmp_path / "run", epochs=1, max_train_examples=10
        )
    )
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["num_examples"] == {"train": 10, "dev": 12, "test": 12}
    assert config["total_steps"] == 2
