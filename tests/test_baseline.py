"""The cosine baseline against a hand computation on a hand-built store."""

from __future__ import annotations

import numpy as np
import pytest

from snowfire.cache import Store, example_key
from snowfire.heads.baseline import cosine_scores


def test_cosine_of_mean_pooled_segments(tmp_path):
    store = Store(tmp_path / "s")
    pool = store.ensure_pool({"name": "x", "spec": "x"}, "float32", 2, 3)
    a = np.array([[[1, 0, 0], [0, 0, 9]], [[3, 0, 0], [0, 0, 9]]], dtype=np.float32)  # (2, L, D)
    b = np.array([[[0, 0, 0], [0, 2, 2]]], dtype=np.float32)  # (1, L, D)
    feats = np.concatenate([a, b])  # top layer: a mean (0, 0, 9), b mean (0, 2, 2)
    key = example_key(pool, {"a": ["p"], "b": ["q"]})
    with store.writer(pool):
        store.write_segment(
            pool,
            "s1",
            [key],
            [(feats, np.array([0, 0, 0], np.int32), np.array([0, 0, 1], np.int8), 2)],
            "float32",
        )
    manifest = {
        "id": "fs",
        "encoder": {"spec": "x"},
        "encoder_id": pool,
        "task": "stsb",
        "split": "dev",
        "num_layers": 2,
        "dim": 3,
        "dtype": "float32",
    }
    info = store.write_featureset(manifest, [key])
    assert cosine_scores(store, info)[0] == pytest.approx(1 / np.sqrt(2), abs=1e-12)
    assert cosine_scores(store, info, layer=0)[0] == pytest.approx(0.0, abs=1e-12)
