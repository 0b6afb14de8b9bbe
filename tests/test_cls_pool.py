"""[CLS] from the cache: the stored rows are every hidden state transformers gives, specials
included (word id -1 says which), and `pool: "cls"` returns an example's first row on the
service, in `snowfire.FeatureDataset` and as the input of the linear/MLP ❄️ head; refused,
naming the example, where the first row is a word piece (an encoder without [CLS], as ELMo)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

import snowfire
from snowfire.api import Settings, create_app
from snowfire.cache import ExampleBatch, InvalidSelectionError, Store, reduce_batch, wire
from snowfire.extractor import ExtractConfig, TextInput, extract, load_encoder

TEXTS = [
    TextInput(tuple("the quick brown fox jumps".split())),
    TextInput(tuple("a man plays guitar".split()), tuple("someone playing piano".split())),
    TextInput(tuple("dogs runs".split())),  # dogs -> dog ##s
]


def _store(tiny_bert_dir, path, pair_encoding="joint"):
    store = Store(path)
    config = ExtractConfig(
        encoder=f"hf:{tiny_bert_dir}",
        store=str(path),
        dtype="float32",
        pair_encoding=pair_encoding,
        progress=False,
    )
    encoder = load_encoder(config.encoder, **config.encoder_options())
    return store, extract(encoder, TEXTS, store, task=None, split=None, config=config)


@pytest.fixture(scope="module")
def joint(tiny_bert_dir, tmp_path_factory):
    return _store(tiny_bert_dir, tmp_path_factory.mktemp("cls") / "joint")


def _hidden_states(path, text: TextInput) -> tuple[np.ndarray, list[int]]:
    """transformers' own forward pass: (S, L, D) hidden states and the token ids."""
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).eval()
    b = list(text.words_b) if text.words_b else None
    enc = tok(list(text.words_a), b, is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True)
    return torch.stack(out.hidden_states, dim=2)[0].numpy(), enc["input_ids"][0].tolist()


def test_stored_rows_are_transformers_hidden_states_cls_included(tiny_bert_dir, joint):
    from transformers import AutoTokenizer

    store, info = joint
    cls_id = AutoTokenizer.from_pretrained(tiny_bert_dir).cls_token_id
    data = snowfire.FeatureDataset(store, info)
    for i, text in enumerate(TEXTS):
        want, ids = _hidden_states(tiny_bert_dir, text)
        got = data[i]["features"].numpy()
        assert got.shape == want.shape  # one row per token, [CLS] and [SEP] too
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
        special = [k for k, t in enumerate(ids) if t in (cls_id, *_sep(tiny_bert_dir))]
        assert ids[0] == cls_id and special == np.flatnonzero(data[i]["word_ids"] < 0).tolist()
        pooled = snowfire.FeatureDataset(store, info, pool="cls")[i]["features"]  # (1, L, D)
        assert pooled.shape == (1, *want.shape[1:])
        assert np.array_equal(pooled[0].numpy(), got[0])  # [CLS]: the first row, exactly


def _sep(path) -> tuple[int, ...]:
    from transformers import AutoTokenizer

    return (AutoTokenizer.from_pretrained(path).sep_token_id,)


def test_the_service_pools_cls_and_names_an_example_without_one(joint, tmp_path):
    store, info = joint
    with TestClient(create_app(settings=Settings(store=store.path))) as client:
        r = client.post(
            f"/v1/featuresets/{info.id}/features", json={"indices": [1, 0], "pool": "cls"}
        )
        assert r.status_code == 200, r.text
        got = wire.decode(r.content)
        full = store.read(info.id, indices=[1, 0])
        assert got.offsets.tolist() == [0, 1, 2]
        np.testing.assert_array_equal(
            got.features, np.stack([full.example(0)[0], full.example(1)[0]])
        )
        sides = client.post(
            f"/v1/featuresets/{info.id}/features",
            json={"indices": [1], "pool": "cls", "pool_sides": True},
        )
        assert sides.status_code == 409  # joint pairs: one [CLS] (this set's state)
        assert "joint pairs have one [CLS]: pool cls without pool_sides" in sides.json()["detail"]
    # an encoder without [CLS] (ELMo): the first row is a word
    bare = Store(tmp_path / "bare")
    pool = bare.ensure_pool({"name": "bare", "spec": "bare"}, "float32", 2, 4)
    keys = ["k0"]
    with bare.writer(pool):
        part = (
            np.ones((3, 2, 4), np.float32),
            np.arange(3, dtype=np.int32),
            np.zeros(3, np.int8),
            -1,
        )
        bare.write_segment(pool, "seg0", keys, [part], "float32")
    manifest = {
        "id": "bare",
        "encoder": {"name": "bare", "spec": "bare"},
        "encoder_id": pool,
        "task": None,
        "split": None,
        "num_layers": 2,
        "dim": 4,
        "dtype": "float32",
    }
    bare.write_featureset(manifest, keys, [{"a": ["x"], "b": None}])
    with TestClient(create_app(settings=Settings(store=bare.path))) as client:
        r = client.post("/v1/featuresets/bare/features", json={"indices": [0], "pool": "cls"})
        assert r.status_code == 409
        assert r.json()["detail"] == (
            "pool cls: example 0 (k0): its first token is a word piece, not a special token; "
            "the encoder stored no [CLS] state (ELMo adds none): use first"
        )
    with pytest.raises(ValueError, match="its first token is a word piece"):
        snowfire.FeatureDataset(bare.path, "bare", pool="cls")[0]


def test_separate_pairs_have_a_cls_per_side(tiny_bert_dir, tmp_path):
    store, info = _store(tiny_bert_dir, tmp_path / "sep", pair_encoding="separate")
    full = store.read(info.id, indices=[1])
    start = int(full.pair_starts[0])
    sides = reduce_batch(full, pool="cls", sides=True)
    np.testing.assert_array_equal(sides.features, full.features[[0, start]].astype(np.float32))
    assert full.word_ids[0] == full.word_ids[start] == -1


def test_the_linear_head_reads_cls_when_asked(joint):
    from snowfire.heads import build_head

    store, info = joint
    data = snowfire.FeatureDataset(store, info, labels=[0, 1, 0])
    batch = data.collate([data[0], data[2]])
    head = build_head(
        "linear",
        kind="classification",
        pair=False,
        num_layers=info.num_layers,
        dim=info.dim,
        num_labels=2,
        pool="cls",
    ).eval()
    logits, loss = head(batch)
    x = head.mix(batch.features)  # (B, S, D)
    torch.testing.assert_close(logits, head.out(x[:, 0]), rtol=0, atol=0)
    assert head.config["pool"] == "cls" and torch.isfinite(loss)
    mean = build_head(
        "linear",
        kind="classification",
        pair=False,
        num_layers=info.num_layers,
        dim=info.dim,
        num_labels=2,
    )
    assert mean.config["pool"] == "mean"  # the default: unchanged
    words = ExampleBatch(
        np.ones((2, 3, 32), np.float32),
        np.array([0, 2]),
        np.array([0, 1]),
        np.zeros(2, np.int8),
        np.array([-1]),
        [0, 1, 2],
        ["k"],
    )
    from snowfire.heads import collate

    with pytest.raises(ValueError, match="pool cls: an example's first token is a word piece"):
        head(collate(words, None, kind="classification"))
    with pytest.raises(ValueError, match="pool must be one of mean, cls, got 'max'"):
        build_head(
            "linear",
            kind="classification",
            pair=False,
            num_layers=3,
            dim=32,
            num_labels=2,
            pool="max",
        )


def test_reduce_refuses_cls_on_a_word_piece():
    eb = ExampleBatch(
        np.ones((2, 1, 2), np.float32),
        np.array([0, 2]),
        np.array([0, 1]),
        np.zeros(2, np.int8),
        np.array([-1]),
        [0],
        ["k9"],
    )
    with pytest.raises(InvalidSelectionError, match=r"example 0 \(k9\): its first token"):
        reduce_batch(eb, pool="cls")
