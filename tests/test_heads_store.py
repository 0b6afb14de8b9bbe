"""Heads on real store batches: a tiny random BERT extracts into a store, `collate` pads what
the store returns, every head takes one training step on it."""

from __future__ import annotations

import pytest
import torch

from snowfire.cache import Store
from snowfire.extractor import ExtractConfig, TextInput, extract
from snowfire.extractor.hf import HFEncoder
from snowfire.heads import HEADS, build_head, collate

SINGLE = [
    TextInput(tuple("the dogs runs".split())),  # "dogs" -> dog ##s
    TextInput(tuple("a man plays guitar in the park".split())),
]
PAIRS = [
    TextInput(tuple("a man plays guitar".split()), tuple("someone playing piano".split())),
    TextInput(tuple("dogs eats".split()), tuple("the cat".split())),
]
TINY = {
    "mlp": {"hidden": 4},
    "bcn": {"ff_dim": 4, "hidden": 4, "maxout_dims": (4,)},
    "esim": {"hidden": 4},
    "bilstm-crf": {"hidden": 4},
    "bilstm-softmax": {"hidden": 4},
}


def _read(tiny_bert_dir, tmp_path, texts, pair_encoding="joint"):
    enc = HFEncoder(
        tiny_bert_dir, name="tiny", spec=f"hf:{tiny_bert_dir}", pair_encoding=pair_encoding
    )
    store = Store(tmp_path / "s")
    cfg = ExtractConfig(
        encoder=enc.identity["spec"],
        store=str(store.path),
        progress=False,
        dtype="float16",
        pair_encoding=pair_encoding,
    )
    info = extract(enc, texts, store, task=None, split=None, config=cfg)
    return info, store.read(info.id, indices=list(range(len(texts))))


@pytest.mark.parametrize("pair_encoding", ["joint", "separate"])
def test_pairs_split_into_the_pieces_of_each_text(tiny_bert_dir, tmp_path, pair_encoding):
    info, eb = _read(tiny_bert_dir, tmp_path, PAIRS, pair_encoding)
    batch = collate(eb, [0, 1], kind="classification")
    assert batch.mask_a.sum(1).tolist() == [4, 3]  # "dogs" is two pieces
    assert batch.mask_b.sum(1).tolist() == [3, 2]
    ex = eb.example(1)  # (S, L, D)
    start = int(eb.pair_starts[1])
    first_b = start + (1 if pair_encoding == "separate" else 0)  # past the second [CLS]
    torch.testing.assert_close(batch.features_a[1, 0], torch.from_numpy(ex[1]).float())
    torch.testing.assert_close(batch.features_b[1, 0], torch.from_numpy(ex[first_b]).float())
    for name, spec in HEADS.items():
        if spec.texts == "single" or "classification" not in spec.kinds:
            continue
        torch.manual_seed(0)
        head = build_head(
            name,
            kind="classification",
            pair=True,
            num_layers=info.num_layers,
            dim=info.dim,
            num_labels=2,
            **TINY.get(name, {}),
        )
        _, loss = head(batch)
        loss.backward()
        assert torch.isfinite(loss), name


def test_taggers_train_on_first_pieces(tiny_bert_dir, tmp_path):
    info, eb = _read(tiny_bert_dir, tmp_path, SINGLE)
    tags = [[0, 1, 2], [1, 0, 0, 2, 0, 0, 1]]
    batch = collate(eb, tags, kind="tagging")
    assert batch.first_piece_index[0, :3].tolist() == [1, 2, 4]
    for name, spec in HEADS.items():
        if "tagging" not in spec.kinds:
            continue
        for over_pieces in (False, True) if name.startswith("bilstm") else (False,):
            torch.manual_seed(0)
            head = build_head(
                name,
                kind="tagging",
                pair=False,
                num_layers=info.num_layers,
                dim=info.dim,
                num_labels=3,
                **({"over_pieces": over_pieces} if name != "probe" else {}),
                **TINY.get(name, {}),
            )
            out, loss = head(batch)
            loss.backward()
            assert [len(p) for p in head.predict(out)] == [3, 7], name
