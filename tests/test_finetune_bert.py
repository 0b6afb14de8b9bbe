"""BertFinetuner's data side: word alignment by first piece, truncation, pair token types."""

from __future__ import annotations

import torch

from finetune import BertFinetuner
from tasks import Example, get_task


def _tagger(tiny_bert_dir, max_length=128):
    spec = get_task("conll2003")
    return BertFinetuner(
        tiny_bert_dir,
        kind="tagging",
        num_labels=len(spec.labels),
        labels=spec.labels,
        max_length=max_length,
    ), spec


def test_first_piece_of_each_word_and_its_tag(tiny_bert_dir):
    model, spec = _tagger(tiny_bert_dir)
    ex = Example(0, ("the", "dogs", "runs"), tags=("O", "I-PER", "O"))
    batch = model.collate([ex, Example(1, ("a",), tags=("O",))])
    pieces = model.tokenizer.convert_ids_to_tokens(batch["input_ids"][0])
    assert pieces[:6] == ["[CLS]", "the", "dog", "##s", "runs", "[SEP]"]
    assert batch["first_piece"][0].tolist() == [1, 2, 4]
    assert batch["word_mask"].tolist() == [[True, True, True], [True, False, False]]
    per, o = spec.labels.index("I-PER"), spec.labels.index("O")
    assert batch["labels"].tolist() == [[o, per, o], [o, -100, -100]]


def test_truncated_words_get_no_loss_and_are_predicted_o(tiny_bert_dir):
    model, spec = _tagger(tiny_bert_dir, max_length=6)  # [CLS] + 4 pieces + [SEP]
    words = ("the", "man", "plays", "guitar", "in", "the", "park")
    batch = model.collate([Example(0, words, tags=("I-PER",) * 7)])
    assert batch["word_mask"].tolist() == [[True] * 4 + [False] * 3]
    assert batch["labels"][0, 4:].tolist() == [-100] * 3
    model.eval()
    with torch.no_grad():
        out, loss = model(batch)
    assert torch.isfinite(loss)
    (tags,) = model.predict(out)
    assert len(tags) == 7 and tags[4:] == [spec.labels.index("O")] * 3


def test_pairs_are_encoded_jointly_with_token_types(tiny_bert_dir):
    model = BertFinetuner(tiny_bert_dir, kind="regression", num_labels=1)
    batch = model.collate([Example(0, ("a", "dog"), ("the", "cat"), label=3.5)])
    pieces = model.tokenizer.convert_ids_to_tokens(batch["input_ids"][0])
    assert pieces == ["[CLS]", "a", "dog", "[SEP]", "the", "cat", "[SEP]"]
    assert batch["token_type_ids"][0].tolist() == [0, 0, 0, 0, 1, 1, 1]
    assert batch["labels"].tolist() == [3.5]
    out, loss = model(batch)
    assert out.shape == (1,) and loss.shape == ()
