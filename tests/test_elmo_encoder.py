"""ElmoEncoder: the fixed state policy, pairs, identity, spec resolution, state carrying."""

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from snowfire.extractor import EXTRACTOR_VERSION
from snowfire.extractor.base import TextInput
from snowfire.extractor.elmo import ElmoBiLM, ElmoEncoder, batch_to_ids
from snowfire.extractor.elmo.state import CarriedState, broadcast_state, warmup_state

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures"
MODEL = FIXTURES / "allennlp_elmo"
TOL = 1e-6

pytestmark = pytest.mark.skipif(not MODEL.is_dir(), reason=f"ELMo fixtures not found in {FIXTURES}")

SENTENCES = [
    "the cat sat on the mat .",
    "a remarkably long sentence , with many words in it , goes here to force some padding .",
    "short one",
    "Paris is the capital of France .",
    "it 's a charming and often affecting journey .",
]


@pytest.fixture(scope="module")
def fixed() -> ElmoEncoder:
    return ElmoEncoder.from_spec(str(MODEL), batch_size=4)


def encode(encoder, texts, start=0):
    prepared = [
        encoder.prepare(start + i, TextInput(tuple(t.split()))) for i, t in enumerate(texts)
    ]
    return [e.features for e in encoder.encode(prepared)]


def test_fixed_is_independent_of_batch_order_and_neighbours(fixed):
    alone = [encode(fixed, [s])[0] for s in SENTENCES]
    together = encode(fixed, SENTENCES)
    reversed_ = encode(fixed, SENTENCES[::-1])[::-1]
    with_neighbours = encode(fixed, ["some other text first ."] * 3 + SENTENCES)[3:]
    # a few float32 ulps of each value: a batch's shape changes the matmuls' summation order
    # (seen: 5 ulps, 1.2e-6, on a value of 3.0 under the parallel suite)
    for a, b, c, d in zip(alone, together, reversed_, with_neighbours, strict=True):
        np.testing.assert_allclose(b, a, rtol=TOL, atol=TOL)
        np.testing.assert_allclose(c, a, rtol=TOL, atol=TOL)
        np.testing.assert_allclose(d, a, rtol=TOL, atol=TOL)
    again = encode(fixed, SENTENCES[:1])[0]  # no state leaks from one call to the next
    np.testing.assert_array_equal(again, alone[0])


@torch.inference_mode()
def test_fixed_differs_from_zero_state(fixed):
    words = SENTENCES[0].split()
    layers, _, _ = fixed.bilm(batch_to_ids([words]))  # zero initial state, (3, 1, T+2, 32)
    zero = layers[:, 0, 1:-1].permute(1, 0, 2).numpy()  # (T, 3, 32)
    feats = encode(fixed, [SENTENCES[0]])[0]
    np.testing.assert_array_equal(feats[:, 0], zero[:, 0])  # layer 0 has no state
    assert np.abs(feats[:, 1:] - zero[:, 1:]).max() > 1e-2


def test_fixed_state_is_the_warmup_state_broadcast(fixed):
    state = warmup_state(fixed.bilm)
    assert state.h.shape == (2, 2, 1, 16) and state.c.shape == (2, 2, 1, 64)
    assert state.h.abs().sum() > 0
    wide = broadcast_state(state, 3)
    assert wide.batch_size == 3 and torch.equal(wide.h[:, :, 2], state.h[:, :, 0])


def test_pairs_are_encoded_separately_and_concatenated(fixed):
    a, b = SENTENCES[0].split(), SENTENCES[3].split()
    pair = fixed.encode([fixed.prepare(0, TextInput(tuple(a), tuple(b)))])[0]
    fa, fb = encode(fixed, [SENTENCES[0], SENTENCES[3]])
    assert pair.pair_start == len(a)
    np.testing.assert_allclose(pair.features, np.concatenate([fa, fb]), rtol=0, atol=TOL)
    np.testing.assert_array_equal(pair.word_ids, list(range(len(a))) + list(range(len(b))))
    np.testing.assert_array_equal(pair.type_ids, [0] * len(a) + [1] * len(b))
    assert pair.word_ids.dtype == np.int32 and pair.type_ids.dtype == np.int8


def test_identity_and_protocol_fields(fixed):
    ident = fixed.identity
    assert ident["kind"] == "elmo" and ident["name"] == "allennlp_elmo"
    assert ident["state_policy"] == "fixed" and ident["pair_encoding"] == "separate"
    assert ident["extractor_version"] == EXTRACTOR_VERSION
    assert ident["options_sha256"].startswith("117cb6d2fb87")  # fixtures README
    assert ident["weights_sha256"].startswith("dfdfd3001b59")
    assert len(ident["warmup_sha256"]) == 64
    assert (fixed.num_layers, fixed.dim, fixed.ordered) == (3, 32, False)
    prepared = fixed.prepare(7, TextInput(("a", "b"), ("c",)))
    assert prepared.index == 7 and prepared.length == 4 + 3


def test_spec_forms_give_the_same_encoder(fixed, tmp_path):
    spec = f"{MODEL / 'options.json'},{MODEL / 'lm_weights.hdf5'}"
    explicit = ElmoEncoder.from_spec(spec, state="stateful", batch_size=2)
    assert explicit.identity["weights_sha256"] == fixed.identity["weights_sha256"]
    assert explicit.identity["batch_size"] == 2 and "warmup_sha256" not in explicit.identity
    assert explicit.ordered
    shutil.copy(MODEL / "options.json", tmp_path / "elmo_tiny_options.json")
    shutil.copy(MODEL / "lm_weights.hdf5", tmp_path / "elmo_tiny_weights.hdf5")
    copied = ElmoEncoder.from_spec(str(tmp_path))
    assert copied.identity["name"] == "elmo_tiny"
    assert {k: v for k, v in copied.identity.items() if k != "name"} == {
        k: v for k, v in fixed.identity.items() if k != "name"
    }


@torch.inference_mode()
def test_padding_rows_and_lengths():
    """A sentence padded in a batch gives what it gives alone; padding is zero in every layer."""
    model = ElmoBiLM.from_files(MODEL / "options.json", MODEL / "lm_weights.hdf5")
    short, long = SENTENCES[2].split(), SENTENCES[1].split()
    alone, _, state_alone = model(batch_to_ids([short]))
    both, mask, state_both = model(batch_to_ids([short, long]))
    n = len(short) + 2
    torch.testing.assert_close(both[:, 0, :n], alone[:, 0], rtol=0, atol=TOL)
    assert both[:, 0, n:].eq(0).all() and mask[0].sum() == n
    torch.testing.assert_close(state_both.h[:, :, :1], state_alone.h, rtol=0, atol=TOL)


@torch.inference_mode()
def test_carried_state_rows_follow_the_reference_rules():
    model = ElmoBiLM.from_files(MODEL / "options.json", MODEL / "lm_weights.hdf5")
    carried = CarriedState(model)
    ids = batch_to_ids([s.split() for s in SENTENCES[:3]])  # (3, T+2, 50)
    _, _, new = model(ids, carried.take(3))
    carried.put(new)
    # Batch of 2 whose second row is all padding: row 0 moves on, rows 1 and 2 keep their state.
    ids2 = torch.zeros(2, 5, 50, dtype=torch.long)
    ids2[0, :4] = batch_to_ids([["one", "more"]])[0]
    _, _, new2 = model(ids2, carried.take(2))
    carried.put(new2)
    state = carried.take(4)  # a bigger batch: row 3 starts from zero
    assert not torch.equal(state.h[:, :, 0], new.h[:, :, 0])
    assert torch.equal(state.h[:, :, 1:3], new.h[:, :, 1:3])
    assert state.h[:, :, 3].eq(0).all() and state.c[:, :, 3].eq(0).all()
    carried.reset()
    assert carried.take(1).h.eq(0).all()


@torch.inference_mode()
def test_stateful_pairs_run_b_after_a_on_the_same_rows():
    encoder = ElmoEncoder.from_spec(str(MODEL), state="stateful", batch_size=2)
    a0, b0, a1 = (SENTENCES[i].split() for i in range(3))
    out = encoder.encode(
        [
            encoder.prepare(0, TextInput(tuple(a0), tuple(b0))),
            encoder.prepare(1, TextInput(tuple(a1))),
        ]
    )
    model = encoder.bilm
    first, _, state = model(batch_to_ids([a0, a1]))  # (3, 2, T+2, 32)
    ids_b = batch_to_ids([b0])  # row 1 has no b text: an all-padding row keeps its state
    ids_b = torch.cat([ids_b, torch.zeros_like(ids_b)])  # (2, T+2, 50)
    second, _, _ = model(ids_b, state)
    want0 = torch.cat([first[:, 0, 1 : len(a0) + 1], second[:, 0, 1 : len(b0) + 1]], dim=1)
    np.testing.assert_allclose(out[0].features, want0.permute(1, 0, 2).numpy(), atol=TOL, rtol=0)
    want1 = first[:, 1, 1 : len(a1) + 1].permute(1, 0, 2).numpy()
    np.testing.assert_allclose(out[1].features, want1, atol=TOL, rtol=0)
    assert out[0].pair_start == len(a0) and out[1].pair_start == -1
