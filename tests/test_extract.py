"""Extraction into the store with a tiny random BERT: alignment, windows, pairs, dedup."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from snowfire.cache import Store
from snowfire.extractor import ExtractConfig, TextInput, extract
from snowfire.extractor.hf import HFEncoder


def _encoder(path, **kw):
    return HFEncoder(path, name="tiny", spec=f"hf:{path}", **kw)


def _quiet(enc, store, **kw) -> ExtractConfig:
    """The config of a quiet float32 extraction with `enc` (its encoder options are the
    encoder's, already loaded) into `store`."""
    return ExtractConfig(
        encoder=enc.identity["spec"], store=str(store.path), progress=False, dtype="float32", **kw
    )


def _reference(path, words_a, words_b=None):
    """All hidden states from a plain transformers forward pass: (S, L, D)."""
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).eval()
    enc = tok(words_a, words_b, is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        out = model(**enc, output_hidden_states=True)
    return torch.stack(out.hidden_states, dim=2)[0].numpy()


def test_store_matches_plain_forward(tiny_bert_dir, tmp_path):
    enc = _encoder(tiny_bert_dir)
    texts = [
        TextInput(tuple("the quick brown fox jumps".split())),
        TextInput(tuple("a man plays guitar".split()), tuple("someone playing piano".split())),
        TextInput(tuple("dogs runs".split())),  # "dogs" -> dog ##s: two pieces, one word
    ]
    store = Store(tmp_path / "s")
    info = extract(enc, texts, store, task=None, split=None, config=_quiet(enc, store))
    assert (info.num_examples, info.num_layers, info.dim) == (3, 3, 32)
    batch = Store(tmp_path / "s").read(info.id, indices=[0, 1, 2])
    for i, t in enumerate(texts):
        ref = _reference(tiny_bert_dir, list(t.words_a), t.words_b and list(t.words_b))
        np.testing.assert_allclose(batch.example(i), ref, atol=1e-5)
    s, e = batch.offsets[2], batch.offsets[3]
    assert batch.word_ids[s:e].tolist() == [-1, 0, 0, 1, -1]
    s, e = batch.offsets[1], batch.offsets[2]
    assert batch.pair_starts.tolist() == [-1, 6, -1]
    assert batch.type_ids[s:e].tolist() == [0] * 6 + [1] * 4
    assert batch.word_ids[s:e].tolist() == [-1, 0, 1, 2, 3, -1, 0, 1, 2, -1]


def test_long_input_is_windowed_not_truncated(tiny_bert_dir, tmp_path):
    enc = _encoder(tiny_bert_dir, max_length=16)
    words = tuple(("the man plays guitar in the park and " * 6).split())  # 48 words
    store = Store(tmp_path / "s")
    info = extract(enc, [TextInput(words)], store, task=None, split=None, config=_quiet(enc, store))
    batch = Store(tmp_path / "s").read(info.id, indices=[0])
    assert batch.offsets[-1] == len(words) + 2
    assert batch.word_ids[1:-1].tolist() == list(range(len(words)))
    # the first window's interior equals a plain forward pass over that window alone
    ref = _reference(tiny_bert_dir, list(words[:14]))
    np.testing.assert_allclose(batch.example(0)[1:7], ref[1:7], atol=1e-5)


def test_separate_pairs_concatenate_two_sequences(tiny_bert_dir, tmp_path):
    enc = _encoder(tiny_bert_dir, pair_encoding="separate")
    a, b = tuple("a man plays guitar".split()), tuple("someone runs".split())
    store = Store(tmp_path / "s")
    info = extract(enc, [TextInput(a, b)], store, task=None, split=None, config=_quiet(enc, store))
    batch = Store(tmp_path / "s").read(info.id, indices=[0])
    assert batch.pair_starts.tolist() == [6]
    np.testing.assert_allclose(batch.example(0)[:6], _reference(tiny_bert_dir, list(a)), atol=1e-5)
    np.testing.assert_allclose(batch.example(0)[6:], _reference(tiny_bert_dir, list(b)), atol=1e-5)
    assert batch.type_ids.tolist() == [0] * 6 + [1] * 4


def test_same_text_is_computed_once(tiny_bert_dir, tmp_path):
    enc = _encoder(tiny_bert_dir)
    store = Store(tmp_path / "s")
    t = TextInput(tuple("the dog runs".split()), tuple("a cat runs".split()))
    first = extract(enc, [t, t], store, task="sick-e", split="dev", config=_quiet(enc, store))
    second = extract(enc, [t], store, task="sick-r", split="dev", config=_quiet(enc, store))
    assert first.encoder_id == second.encoder_id
    assert store.featureset_keys(first.id) == store.featureset_keys(second.id) * 2
    segments = list((store.path / "pools" / first.encoder_id / "segments").iterdir())
    assert len(segments) == 1  # the second extraction stored nothing new


def test_empty_text_is_refused(tiny_bert_dir, tmp_path):
    enc, store = _encoder(tiny_bert_dir), Store(tmp_path / "s")
    with pytest.raises(ValueError, match="example 1: empty text"):
        extract(
            enc,
            [TextInput(("a",)), TextInput(())],
            store,
            task=None,
            split=None,
            config=_quiet(enc, store),
        )


def test_tiles_option_writes_either_layout_and_reads_the_same(tiny_bert_dir, tmp_path):
    """`snowfire extract --tiles layer` writes a features chunk per layer (cache/segment.py),
    the default every layer per chunk; the two stores read the same bits, and each manifest
    says which tiles its run wrote."""
    import json

    from snowfire.cli.main import main as snowfire

    text = tmp_path / "in.txt"
    rng = np.random.default_rng(0)
    words = "the a man dog plays runs guitar park in quickly".split()
    text.write_text(
        "\n".join(" ".join(rng.choice(words, int(rng.integers(2, 40)))) for _ in range(30))
    )
    stores = {}
    for tiles in ("token", "layer"):
        store = tmp_path / tiles
        argv = ["extract", "--encoder", f"hf:{tiny_bert_dir}", "--input", str(text), "--quiet"]
        argv += ["--store", str(store), "--segment-tokens", "200", "--dtype", "float32"]
        assert snowfire(argv + (["--tiles", "layer"] if tiles == "layer" else [])) == 0
        stores[tiles] = Store(store)
        metas = list(store.glob("pools/*/segments/*/features/zarr.json"))
        assert len(metas) >= 2  # several segments
        for meta in metas:
            chunk = json.loads(meta.read_text())["codecs"][0]["configuration"]["chunk_shape"]
            assert chunk == [32, 3 if tiles == "token" else 1, 32]
        (fs,) = stores[tiles].list_featuresets()
        manifest = json.loads(next(store.glob("featuresets/*.json")).read_text())
        assert manifest["extractor"]["tiles"] == tiles
    idx = [int(i) for i in rng.permutation(30)]
    for layers in (None, [2], [1, 0]):
        a = stores["token"].read(fs.id, indices=idx, layers=layers)
        b = stores["layer"].read(fs.id, indices=idx, layers=layers)
        np.testing.assert_array_equal(a.features.view(np.uint32), b.features.view(np.uint32))


def test_unknown_tiles_are_refused_before_anything_is_encoded(tiny_bert_dir, tmp_path):
    """The config refuses the value when built, so no extraction starts with it."""
    enc = _encoder(tiny_bert_dir)
    calls = []
    real = enc.encode
    enc.encode = lambda *a, **k: calls.append(1) or real(*a, **k)
    store = Store(tmp_path / "s")
    with pytest.raises(
        ValueError,
        match=r"ExtractConfig.tiles: expected one of token, layer, "
        r"got 'row'",
    ):
        extract(
            enc,
            [TextInput(("a", "dog"))],
            store,
            task=None,
            split=None,
            config=_quiet(enc, store, tiles="row"),
        )
    assert not calls
    assert not list((tmp_path / "s").glob("pools/*/segments/*"))
