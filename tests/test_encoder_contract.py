"""One contract every `extractor.Encoder` passes (extractor/base.py): a tiny random BERT (joint
and separate pairs), the bundled all-MiniLM-L6-v2 (slow) and ELMo from the tiny real-format
biLMs in ../shared/fixtures (AllenNLP's, bilm-tf's, and the stateful policy).

Each is checked for: an identity that is JSON, names what made it and is the same when loaded
again; features of (S, L, D) with its num_layers and dim; word_ids, type_ids and pair_start
that agree with the words given; prepare and encode that give the same bytes twice; a long
input encoded whole (windows, never truncated); pairs; and, for an encoder that may batch
freely (`ordered` False), the same features alone as in any batch. A new encoder is one entry
in `ENCODERS`.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from snowfire.cache import canonical_json, identity_content
from snowfire.extractor import EXTRACTOR_VERSION, Encoder, TextInput, load_encoder
from tests.helpers import FIXTURES, WORDS, need_shared

# Batching changes padding and matmul shapes, not the maths: float32 features of one text
# alone and in a batch agree to this (BERT over 2-7 layers; ELMo's tests use 1e-6).
BATCH_TOL = 2e-5

ENCODERS = {  # id -> (spec, load_encoder options); "{bert}" is the tiny BERT's folder
    "tiny-bert": ("hf:{bert}", {}),
    "tiny-bert-separate": ("hf:{bert}", {"pair_encoding": "separate"}),
    "minilm": ("minilm", {}),
    "elmo-allennlp": ("elmo:{fixtures}/allennlp_elmo", {}),
    "elmo-bilm-tf": ("elmo:{fixtures}/bilm_tf_elmo", {}),
    "elmo-stateful": ("elmo:{fixtures}/allennlp_elmo", {"elmo_state": "stateful", "batch_size": 2}),
}
SLOW = {"minilm"}


def _load(name: str, tiny_bert_dir) -> Encoder:
    spec, options = ENCODERS[name]
    if "{fixtures}" in spec:
        need_shared(FIXTURES / "allennlp_elmo")
    spec = spec.format(bert=tiny_bert_dir, fixtures=FIXTURES)
    return load_encoder(spec, device="cpu", **options)


@pytest.fixture(
    scope="module",
    params=[pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in ENCODERS],
)
def case(request, tiny_bert_dir):
    """(name, encoder, a second load of the same spec)."""
    return request.param, _load(request.param, tiny_bert_dir), _load(request.param, tiny_bert_dir)


def texts(n: int, seed: int, pairs: bool = False, lo: int = 1, hi: int = 12) -> list[TextInput]:
    rng = np.random.default_rng(seed)

    def words(k):
        return tuple(str(w) for w in rng.choice(WORDS, size=k))

    return [
        TextInput(
            words(int(rng.integers(lo, hi))), words(int(rng.integers(lo, hi))) if pairs else None
        )
        for _ in range(n)
    ]


def encode(encoder, inputs: list[TextInput], start: int = 0):
    if encoder.ordered:
        encoder.reset_state()  # a stateful encoder starts each call from the same state
    prepared = [encoder.prepare(start + i, t) for i, t in enumerate(inputs)]
    return encoder.encode(prepared)


def check_alignment(encoder, text: TextInput, enc) -> None:
    """word_ids, type_ids and pair_start agree with the words of `text`."""
    s = enc.features.shape[0]
    assert enc.features.shape == (s, encoder.num_layers, encoder.dim)
    assert enc.features.dtype == np.float32 and np.isfinite(enc.features).all()
    assert enc.word_ids.dtype == np.int32 and enc.type_ids.dtype == np.int8
    if text.words_b is None:
        assert enc.pair_start == -1
        segments = [(0, s, text.words_a)]
    else:
        assert 0 < enc.pair_start < s
        segments = [(0, enc.pair_start, text.words_a), (enc.pair_start, s, text.words_b)]
    for seg, (lo, hi, words) in enumerate(segments):
        assert (enc.type_ids[lo:hi] == seg).all(), (seg, enc.type_ids)
        ids = enc.word_ids[lo:hi]
        real = ids[ids >= 0]  # special tokens are -1
        assert (np.diff(real) >= 0).all(), ids  # words in order, each one's pieces together
        assert sorted(set(real.tolist())) == list(range(len(words))), (ids, words)


# ---------------------------------------------------------------- identity
def test_identity_names_what_made_the_features_and_is_stable(case):
    name, encoder, again = case
    identity = encoder.identity
    for field in ("kind", "name", "spec", "weights_sha256", "pair_encoding", "precision"):
        assert identity.get(field), field
    assert identity["extractor_version"] == EXTRACTOR_VERSION
    assert len(identity["weights_sha256"]) == 64
    assert json.loads(canonical_json(identity)) == identity  # plain JSON, hashable
    assert identity == again.identity  # loading the same weights again: the same identity
    assert (encoder.num_layers, encoder.dim) == (again.num_layers, again.dim)
    assert encoder.num_layers >= 2 and encoder.dim >= 1
    content = canonical_json(identity_content(identity))  # what keys hash: no local path
    assert str(FIXTURES) not in content and "/tmp" not in content and "pytest" not in content
    if name.startswith("elmo"):
        assert identity["pair_encoding"] == "separate"
        assert identity["state_policy"] == ("stateful" if encoder.ordered else "fixed")


def test_ordered_only_when_state_is_carried(case):
    name, encoder, _ = case
    assert encoder.ordered is (name == "elmo-stateful")


# ---------------------------------------------------------------- shapes and alignment
@pytest.mark.parametrize("pairs", [False, True])
def test_features_and_alignment(case, pairs):
    _, encoder, _ = case
    inputs = texts(5, seed=1, pairs=pairs)
    out = encode(encoder, inputs)
    assert len(out) == len(inputs)
    for text, enc in zip(inputs, out, strict=True):
        check_alignment(encoder, text, enc)


def test_prepare_counts_tokens_and_refuses_an_empty_text(case):
    _, encoder, _ = case
    text = texts(1, seed=2, pairs=True)[0]
    p = encoder.prepare(7, text)
    assert p.index == 7 and p.length >= len(text.words_a) + len(text.words_b)
    for empty in (TextInput(()), TextInput(("a",), ())):
        with pytest.raises(ValueError, match="example 3"):
            encoder.prepare(3, empty)


# ---------------------------------------------------------------- determinism
def test_prepare_and_encode_are_deterministic(case):
    _, encoder, again = case
    inputs = texts(4, seed=3, pairs=True) + texts(3, seed=4)
    assert [encoder.prepare(i, t) for i, t in enumerate(inputs)] == [
        again.prepare(i, t) for i, t in enumerate(inputs)
    ]
    first, second, other = encode(encoder, inputs), encode(encoder, inputs), encode(again, inputs)
    for a, b, c in zip(first, second, other, strict=True):
        for field in ("features", "word_ids", "type_ids"):
            assert getattr(a, field).tobytes() == getattr(b, field).tobytes(), field
            assert getattr(a, field).tobytes() == getattr(c, field).tobytes(), field
        assert a.pair_start == b.pair_start == c.pair_start


# ---------------------------------------------------------------- long input, pairs, batches
def test_a_long_input_is_encoded_whole(case):
    """Longer than any window (tiny BERT: 64 positions; minilm: 512): one row per token of the
    whole text, every word present."""
    _, encoder, _ = case
    rng = np.random.default_rng(5)
    long = TextInput(tuple(str(w) for w in rng.choice(WORDS, size=600)))
    (enc,) = encode(encoder, [long])
    check_alignment(encoder, long, enc)
    assert enc.features.shape[0] >= 600
    if encoder.identity["kind"] == "hf":
        pieces = len(encoder.tokenizer(list(long.words_a), is_split_into_words=True)["input_ids"])
        assert enc.features.shape[0] == pieces  # windows stitched, nothing dropped
        assert encoder.prepare(0, long).length > pieces  # the budget counts the overlaps


def test_pairs(case):
    """Separately encoded pairs are [a alone; b alone]; joint ones read b in a's context."""
    _, encoder, _ = case
    inputs = texts(3, seed=6, pairs=True)
    for text, enc in zip(inputs, encode(encoder, inputs), strict=True):
        (a,) = encode(encoder, [TextInput(text.words_a)])
        (b,) = encode(encoder, [TextInput(text.words_b)])
        assert enc.pair_start == a.features.shape[0]
        np.testing.assert_array_equal(enc.word_ids[: enc.pair_start], a.word_ids)
        if encoder.ordered:  # b read after a in the carried state: only the layout is a's
            continue
        if encoder.identity["pair_encoding"] == "separate":
            np.testing.assert_allclose(enc.features[: enc.pair_start], a.features, atol=BATCH_TOL)
            np.testing.assert_allclose(enc.features[enc.pair_start :], b.features, atol=BATCH_TOL)
            np.testing.assert_array_equal(enc.word_ids, np.concatenate([a.word_ids, b.word_ids]))
        else:  # [CLS] a [SEP] b [SEP]: a's pieces and [SEP] as alone, in b's company
            assert not np.allclose(enc.features[: enc.pair_start], a.features, atol=1e-3)


def test_features_do_not_depend_on_the_batch(case):
    """An encoder free to batch (`ordered` False) gives each text the same features alone,
    in a batch, in another order and among other texts."""
    _, encoder, _ = case
    if encoder.ordered:
        pytest.skip("a stateful encoder's features depend on what came before: see below")
    inputs = texts(6, seed=7, pairs=True) + texts(6, seed=8, lo=1, hi=30)
    alone = [encode(encoder, [t])[0] for t in inputs]
    together = encode(encoder, inputs)
    backwards = encode(encoder, inputs[::-1])[::-1]
    crowded = encode(encoder, texts(5, seed=9, hi=40) + inputs)[5:]
    for i, a in enumerate(alone):
        for other in (together[i], backwards[i], crowded[i]):
            np.testing.assert_allclose(other.features, a.features, rtol=0, atol=BATCH_TOL)
            np.testing.assert_array_equal(other.word_ids, a.word_ids)
            np.testing.assert_array_equal(other.type_ids, a.type_ids)
            assert other.pair_start == a.pair_start


def test_a_stateful_encoder_carries_state_in_input_order(case):
    """The stateful policy (ordered): the same text reads differently after others, and the
    same sequence from a reset reads the same."""
    _, encoder, _ = case
    if not encoder.ordered:
        pytest.skip("a stateless encoder: covered by the batch-invariance test")
    inputs = texts(4, seed=10)
    first = encode(encoder, inputs)
    encoder.reset_state()
    warm = [encoder.prepare(i, t) for i, t in enumerate(inputs)]
    encoder.encode(warm)
    after = encoder.encode(warm)  # the same texts, the state carried from the first call
    assert not np.allclose(after[0].features, first[0].features, atol=1e-4)
    assert [e.features.tobytes() for e in encode(encoder, inputs)] == [
        e.features.tobytes() for e in first
    ]
