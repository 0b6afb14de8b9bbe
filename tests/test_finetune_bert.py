"""BertFinetuner's data side: word alignment by first piece, truncation, pair token types."""

from __future__ import annotations

import torch

from snowfire.finetune import BertFinetuner
from snowfire.tasks import Example, get_task


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


def test_bilstm_crf_output_for_tagging(tiny_bert_dir):
    """Table 5's 🔥 + BiLSTM + CRF: the added parameters are exactly an LSTM per direction and
    a CRF; the loss is the CRF's and learns; predictions cover every word."""
    spec = get_task("conll2003")
    k = len(spec.labels)
    plain = BertFinetuner(tiny_bert_dir, kind="tagging", num_labels=k, labels=spec.labels)
    model = BertFinetuner(
        tiny_bert_dir, kind="tagging", num_labels=k, labels=spec.labels, crf=True, lstm=5
    )
    d, h = model.encoder.config.hidden_size, 5
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    lstm = 2 * (4 * h * (d + h) + 2 * 4 * h)  # two directions: W_ih, W_hh, b_ih, b_hh
    crf = k * k + 2 * k  # transitions, start, end
    assert count(model) - count(plain) == lstm + crf + (2 * h - d) * k  # linear in: 2H not D
    assert model.output.crf is not None and model.output.lstm is not None
    groups = dict(model.layer_groups())
    assert {id(p) for p in model.output.lstm.parameters()} <= {id(p) for p in groups["output"]}
    torch.manual_seed(0)
    examples = [
        Example(0, ("the", "dogs", "runs"), tags=("O", "I-PER", "O")),
        Example(1, ("a", "man"), tags=("O", "I-PER")),
    ]
    batch = model.collate(examples)
    optim = torch.optim.Adam(model.output.parameters(), lr=0.05)
    losses = []
    for _ in range(30):
        _, loss = model(batch)
        optim.zero_grad()
        loss.backward()
        optim.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0]
    model.eval()
    with torch.no_grad():
        out, _ = model(batch)
    per, o = spec.labels.index("I-PER"), spec.labels.index("O")
    assert model.predict(out) == [[o, per, o], [o, per]]
