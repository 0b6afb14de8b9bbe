"""ELMo against the golden outputs of the original TensorFlow biLM (bilm-tf).

Fixtures: ../shared/fixtures/allennlp_elmo (with residual) and bilm_tf_elmo (without); see
their README.md. Tolerance as in AllenNLP's and bilm-tf's tests: numpy.allclose(atol=1e-6)
with its default rtol=1e-5 (the largest absolute difference seen is 1.2e-6, on a value of
magnitude ~3, i.e. a few float32 ulps; float64 gives the same, so it is TF's rounding).
"""

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from snowfire.extractor.base import TextInput
from snowfire.extractor.elmo import ElmoBiLM, ElmoEncoder, batch_to_ids

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures"
ATOL, RTOL = 1e-6, 1e-5
CASES = {  # fixture folder -> sentences file
    "allennlp_elmo": "sentences.json",
    "bilm_tf_elmo": "lm_embeddings_sentences.json",
}

pytestmark = pytest.mark.skipif(
    not (FIXTURES / "allennlp_elmo").is_dir(), reason=f"ELMo fixtures not found in {FIXTURES}"
)


def load_case(name: str) -> tuple[list[list[str]], list[list[np.ndarray]]]:
    """The 3 lists of 10 sentences and the expected top layers, (n_tokens, 2P) each."""
    folder = FIXTURES / name
    sentences = json.loads((folder / CASES[name]).read_text())
    expected = []
    for k in range(3):
        with h5py.File(folder / f"lm_embeddings_{k}.hdf5", "r") as f:
            expected.append([np.concatenate(f[str(i)][...], axis=-1) for i in range(10)])
    return sentences, expected


def bilm(name: str) -> ElmoBiLM:
    return ElmoBiLM.from_files(
        FIXTURES / name / "options.json", FIXTURES / name / "lm_weights.hdf5"
    )


@torch.inference_mode()
def test_char_cnn_token_embeddings():
    model = bilm("allennlp_elmo")
    words = (FIXTURES / "allennlp_elmo" / "vocab_test.txt").read_text().split("\n")
    assert len(words) == 458
    ids = batch_to_ids([words[i : i + 50] for i in range(0, 500, 50)])  # (10, 52, 50)
    emb = model.token_embedder(ids)[:, 1:-1].reshape(-1, 16)[:458]  # (458, P)
    with h5py.File(FIXTURES / "allennlp_elmo" / "elmo_token_embeddings.hdf5", "r") as f:
        want = f["embedding"][...]
    np.testing.assert_allclose(emb.numpy(), want, rtol=RTOL, atol=ATOL)
    assert np.abs(emb.numpy() - want).max() < 2e-6


@torch.inference_mode()
def test_boundary_tokens_equal_literal_markers():
    model = bilm("allennlp_elmo")
    emb = model.token_embedder(batch_to_ids([["hello", "world"]]))  # (1, 4, P)
    literal = model.token_embedder(batch_to_ids([["<S>", "</S>"]]))[:, 1:3]  # (1, 2, P)
    torch.testing.assert_close(emb[0, [0, 3]], literal[0], rtol=0, atol=0)


@pytest.mark.parametrize("name", sorted(CASES))
@torch.inference_mode()
def test_top_layer_with_state_carried_across_batches(name):
    sentences, expected = load_case(name)
    model = bilm(name)
    state = None
    for i in range(10):
        batch = [sentences[k][i].split() for k in range(3)]
        layers, mask, state = model(batch_to_ids(batch), state)  # (3, 3, T+2, 32)
        assert layers.shape[0] == 3 and layers.shape[-1] == 32
        for k in range(3):
            n = len(batch[k])
            assert int(mask[k].sum()) == n + 2
            np.testing.assert_allclose(
                layers[2, k, 1 : n + 1].numpy(), expected[k][i], rtol=RTOL, atol=ATOL
            )


@pytest.mark.parametrize("name", sorted(CASES))
def test_stateful_encoder_reproduces_reference(name):
    sentences, expected = load_case(name)
    encoder = ElmoEncoder.from_spec(str(FIXTURES / name), state="stateful", batch_size=3)
    assert encoder.ordered and encoder.num_layers == 3 and encoder.dim == 32
    order = [(k, i) for i in range(10) for k in range(3)]  # list0[0], list1[0], list2[0], ...
    prepared = [
        encoder.prepare(j, TextInput(tuple(sentences[k][i].split())))
        for j, (k, i) in enumerate(order)
    ]
    encoded = encoder.encode(prepared[:12]) + encoder.encode(prepared[12:])  # calls split freely
    for (k, i), enc in zip(order, encoded, strict=True):
        n = len(sentences[k][i].split())
        assert enc.features.shape == (n, 3, 32) and enc.features.dtype == np.float32
        np.testing.assert_array_equal(enc.word_ids, np.arange(n))
        assert enc.pair_start == -1 and not enc.type_ids.any()
        np.testing.assert_allclose(enc.features[:, 2], expected[k][i], rtol=RTOL, atol=ATOL)


@torch.inference_mode()
def test_zero_state_differs_after_first_batch():
    """Guards the fixture: without carried state, batch 1 is far off (README: about 0.8)."""
    sentences, expected = load_case("bilm_tf_elmo")
    batch = [sentences[k][1].split() for k in range(3)]
    layers, _, _ = bilm("bilm_tf_elmo")(batch_to_ids(batch))
    n = len(batch[0])
    assert np.abs(layers[2, 0, 1 : n + 1].numpy() - expected[0][1]).max() > 0.1
