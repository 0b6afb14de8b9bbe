"""The real bundled encoder (all-MiniLM-L6-v2): golden norms and plain-transformers equality."""

from __future__ import annotations

import numpy as np
import pytest

from snowfire.cache import Store
from snowfire.extractor import ExtractConfig, TextInput, extract, load_encoder

pytestmark = pytest.mark.slow

SENTENCE = "The quick brown fox jumps over the lazy dog ."
# Frobenius norm of each hidden state (12 tokens x 384) of SENTENCE, and of the "the" token,
# computed once with plain transformers (AutoModel, output_hidden_states=True, float32).
GOLDEN_NORMS = [34.2151, 39.8708, 38.9945, 39.3347, 43.5655, 38.9509, 31.3275]
GOLDEN_TOKEN1 = [7.095, 10.7476, 10.9327, 9.922, 11.3438, 8.2276, 7.2175]


@pytest.fixture(scope="module")
def minilm():
    return load_encoder("minilm")


def test_identity_and_shape(minilm):
    assert (minilm.num_layers, minilm.dim) == (7, 384)
    assert minilm.identity["name"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert len(minilm.identity["weights_sha256"]) == 64


def test_golden_norms_through_the_store(minilm, tmp_path):
    store = Store(tmp_path / "s")
    info = extract(
        minilm,
        [TextInput(tuple(SENTENCE.split()))],
        store,
        task=None,
        split=None,
        config=ExtractConfig(encoder="minilm", store=str(store.path), progress=False),
    )
    feats = store.read(info.id, indices=[0]).example(0).astype(np.float32)  # (12, 7, 384)
    assert feats.shape == (12, 7, 384)
    norms = np.linalg.norm(feats, axis=(0, 2))
    # float16 storage: relative error per value <= 2**-11, so norms agree to ~1e-3 relative
    np.testing.assert_allclose(norms, GOLDEN_NORMS, rtol=2e-3)
    np.testing.assert_allclose(np.linalg.norm(feats[1], axis=-1), GOLDEN_TOKEN1, rtol=2e-3)


def test_hub_name_offline_fails_clearly(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RuntimeError, match="could not fetch 'bert-base-uncased'.*local model"):
        load_encoder("hf:bert-base-uncased")


def test_unknown_spec_is_refused():
    with pytest.raises(ValueError, match="unknown encoder spec 'bert'"):
        load_encoder("bert")
