"""The layer sweep's small pieces by hand: the expected layer and the center of gravity
(Tenney et al. 2019), control labels (Hewitt & Liang 2019: one per type, the training
distribution kept), pooled vectors against a loop over stored rows, and the words."""

from __future__ import annotations

import numpy as np
import pytest

from snowfire.compare.layers.control import control_labels, distribution, text_type, uniform
from snowfire.compare.layers.summary import center_of_gravity, expected_layer
from snowfire.compare.layers.words import layer_ranges, recommendation


def test_expected_layer_and_center_of_gravity_by_hand():
    assert expected_layer([0.1, 0.2, 0.3, 0.4]) == pytest.approx(0 * 0.1 + 0.2 + 0.6 + 1.2)
    assert expected_layer([0, 0, 1.0]) == 2.0
    gains = [None, {"delta": 0.1}, {"delta": 0.3}, {"delta": -0.05}]
    want = (1 * 0.1 + 2 * 0.3 + 3 * -0.05) / (0.1 + 0.3 - 0.05)
    assert center_of_gravity(gains, [0, 1, 2, 3]) == pytest.approx(want)
    assert center_of_gravity([None, {"delta": 0.2}], [0, 1]) == pytest.approx(1.0)
    assert center_of_gravity([None, {"delta": -0.1}, {"delta": 0.1}], [0, 1, 2]) is None
    assert center_of_gravity([None], [0]) is None


def test_control_labels_are_one_per_type_and_keep_the_distribution():
    shares = distribution(np.array([0, 0, 0, 1, 2, 0, 1, 0, 0, 0]), 3)
    assert shares.tolist() == [0.7, 0.2, 0.1]
    types = [f"word{i}" for i in range(20_000)]
    labels = control_labels(types, shares)
    counts = np.bincount(labels, minlength=3) / len(types)
    assert np.allclose(counts, shares, atol=0.01)  # sd of a share: ~0.003
    again = control_labels(types[::-1][:500] + ["word7"], shares)  # other order, other company
    assert again[-1] == labels[7] and again[0] == labels[-1]
    assert control_labels(["word7"], shares, seed=1)[0] in (0, 1, 2)
    u = [uniform(t) for t in types[:2000]]
    assert 0 <= min(u) and max(u) < 1 and abs(np.mean(u) - 0.5) < 0.02
    assert text_type(["a", "b"]) != text_type(["a"], ["b"]) == text_type(["a"], ["b"])
    with pytest.raises(ValueError, match="control task: expected training labels, got none"):
        distribution(np.array([], dtype=np.int64), 2)


def test_pooled_vectors_are_the_mean_of_each_examples_rows_and_each_words_pieces(tmp_path):
    from snowfire.cache import Store, digest, example_key
    from snowfire.compare.layers.data import pooled

    rng = np.random.default_rng(0)
    store = Store(tmp_path / "store")
    pool = store.ensure_pool({"name": "x", "spec": "x"}, "float32", 3, 4)
    parts, keys, texts = [], [], []
    word_ids = [[-1, 0, 0, 1, -1], [-1, 0, 1, 1, 1, 2, -1], [-1, 0, -1]]
    for i, ids in enumerate(word_ids):
        feats = rng.normal(size=(len(ids), 3, 4)).astype(np.float32)  # (S, L, D)
        parts.append((feats, np.array(ids, dtype=np.int32), np.zeros(len(ids), np.int8), 0))
        texts.append({"a": [f"w{i}"] * (max(ids) + 1), "b": None})
        keys.append(example_key(pool, texts[-1]))
    with store.writer(pool):
        store.write_segment(pool, digest(keys, 24), keys, parts, "float32")
    manifest = {"id": "fs", "encoder": {"name": "x", "spec": "x"}, "encoder_id": pool}
    manifest |= {"task": "t", "split": "train", "num_layers": 3, "dim": 4, "dtype": "float32"}
    info = store.write_featureset(manifest, keys, texts)
    order = [2, 0, 1]
    got = pooled(store, info, order).numpy()  # (N, L, D)
    for row, i in enumerate(order):
        assert np.allclose(got[row], parts[i][0].mean(axis=0), atol=1e-6)
    words = pooled(store, info, order, words=[1, 2, 3]).numpy()  # (W, L, D)
    want = []
    for i in order:
        ids = np.array(word_ids[i])
        want += [parts[i][0][ids == w].mean(axis=0) for w in range(ids.max() + 1)]
    assert np.allclose(words, np.stack(want), atol=1e-6)
    with pytest.raises(ValueError, match=r"example 2 has 1 stored words, its sentence 2"):
        pooled(store, info, order, words=[2, 2, 3])


ANSWER = {
    "metric": "accuracy",
    "task": {"name": "sst2", "kind": "classification", "metric": "accuracy"},
    "best_layer": 4,
    "carrying": [3, 4],
    "carries": True,
    "layers": [
        {
            "layer": 4,
            "linear": {"score": 0.912, "low": 0.901, "high": 0.923},
            "selectivity": {"linear": {"delta": 0.31, "low": 0.282, "high": 0.339}},
        }
    ],
    "mix_gain": {"delta": 0.006, "low": -0.003, "high": 0.015},
    "expected_layer": 3.62,
    "center_of_gravity": 3.2,
}


def test_the_words_name_the_layers_the_mix_and_the_selectivity():
    assert recommendation(ANSWER) == (
        "layers 3–4 carry most of it (layer 4: accuracy 91.2 [90.1, 92.3]); a mix of all "
        "layers adds +0.6 [-0.3, +1.5] over layer 4 alone: layer 4 alone does as well; "
        "selectivity 31.0 points [28.2, 33.9]; expected layer 3.6, center of gravity 3.2"
    )
    better = ANSWER | {"mix_gain": {"delta": 0.02, "low": 0.01, "high": 0.03}, "carrying": [4]}
    assert "layer 4 carries most of it" in recommendation(better)
    assert "+2.0 [+1.0, +3.0] over layer 4 alone: use the mix" in recommendation(better)
    none = ANSWER | {"carries": False}
    assert recommendation(none).startswith(
        "no layer carries it: the best probe (layer 4: accuracy 91.2 [90.1, 92.3]) does no "
        "better than on a control task of labels drawn at random per text (selectivity 31.0"
    )
    row = {"layer": 4, "linear": {"score": 0.03, "low": -0.04, "high": 0.1}}
    regression = ANSWER | {"carries": False, "metric": "pearson", "layers": [row]}
    assert recommendation(regression) == (
        "no layer carries it: the best probe's score (layer 4: pearson 3.0 [-4.0, 10.0]) is "
        "not above 0 by its interval"
    )
    rows = [{**ANSWER["layers"][0], "layer": layer} for layer in (3, 4)]
    flat = ANSWER | {"carrying": [3, 4], "layers": rows}
    assert recommendation(flat).startswith(
        "every layer does about as well (layer 4: accuracy 91.2 [90.1, 92.3], the best); a mix"
    )
    assert layer_ranges([5]) == "layer 5"
    assert layer_ranges([0, 3, 4, 5, 7]) == "layers 0, 3–5, 7"
