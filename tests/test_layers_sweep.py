"""`snowfire layers` on constructed stores (tests/helpers/layers.py): where only layer 1 of 5
carries the label, the sweep finds layer 1 with an interval above every other layer's, the
mix's expected layer and the center of gravity sit near 1, and the probe is selective; where
no layer carries it, selectivity is near 0 and the words say so. Then the honest protocol's
roles, reading a finished sweep back, and the errors."""

from __future__ import annotations

import json

import pytest

from snowfire.compare import LayersConfig, layers_key, run_layers
from tests.helpers.layers import planted

CARRIER = 1
SIZES = (("train", 600), ("dev", 300))


def _config(spec, store, out=None, **kw) -> LayersConfig:
    kw.setdefault("encoder", "planted")
    return LayersConfig(
        store=str(store),
        task_spec=str(spec),
        out=None if out is None else str(out),
        progress=False,
        **kw,
    )


@pytest.fixture(scope="module")
def carried(tmp_path_factory):
    root = tmp_path_factory.mktemp("carried")
    spec, store = planted(root, CARRIER, SIZES)
    return spec, store, run_layers(_config(spec, store, root / "out"))


@pytest.fixture(scope="module")
def nowhere(tmp_path_factory):
    root = tmp_path_factory.mktemp("nowhere")
    spec, store = planted(root, None, SIZES)
    return run_layers(_config(spec, store))


def test_the_carrying_layer_is_found_with_an_interval_above_every_other(carried):
    *_, answer = carried
    rows = {r["layer"]: r for r in answer["layers"]}
    assert (answer["best_layer"], answer["carrying"], answer["carries"]) == (CARRIER, [1], True)
    others = [r["linear"]["high"] for layer, r in rows.items() if layer != CARRIER]
    assert rows[CARRIER]["linear"]["low"] > max(others)
    assert rows[CARRIER]["linear"]["score"] > 0.9 and max(others) < 0.65
    assert rows[CARRIER]["mlp"]["low"] > max(r["mlp"]["high"] for l_, r in rows.items() if l_ != 1)
    assert len(rows[CARRIER]["linear"]["seeds"]) == 3  # each seed's score on the report split


def test_the_expected_layer_and_the_center_of_gravity_sit_near_the_carrier(carried):
    """Uniform weights would put E[ℓ] at 2 (five layers): the mix moved onto layer 1; the
    cumulative gain arrives at layer 1 and nowhere after."""
    *_, answer = carried
    weights = answer["mix_weights"]
    assert sum(weights) == pytest.approx(1.0, abs=1e-5)
    assert max(range(5), key=weights.__getitem__) == CARRIER and weights[CARRIER] > 0.6
    assert abs(answer["expected_layer"] - CARRIER) < 0.5
    assert answer["expected_layer"] == pytest.approx(sum(i * w for i, w in enumerate(weights)))
    assert abs(answer["center_of_gravity"] - CARRIER) < 0.25
    gains = {c["top"]: c["gain"] for c in answer["cumulative"]}
    assert gains[0] is None and gains[CARRIER]["low"] > 0.3
    assert answer["total_gain"]["low"] > 0.3
    assert all(gains[c]["low"] <= 0 <= gains[c]["high"] for c in (2, 3, 4))


def test_the_carrier_is_selective_and_the_others_are_not(carried):
    *_, answer = carried
    for row in answer["layers"]:
        sel = row["selectivity"]["linear"]
        assert sel["delta"] == pytest.approx(row["accuracy"]["linear"] - row["control"]["linear"])
        if row["layer"] == CARRIER:
            assert sel["delta"] > 0.35 and sel["low"] > 0.25
        else:
            assert sel["low"] <= 0 <= sel["high"] and abs(sel["delta"]) < 0.1
    words = answer["recommendation"]
    assert words.startswith("layer 1 carries most of it (layer 1: accuracy ")
    assert "selectivity" in words and "expected layer" in words and "center of gravity" in words


def test_where_no_layer_carries_the_label_selectivity_is_near_0_and_the_words_say_so(nowhere):
    assert nowhere["carries"] is False
    for row in nowhere["layers"]:
        sel = row["selectivity"]["linear"]
        assert abs(sel["delta"]) < 0.1 and sel["low"] <= 0 <= sel["high"]
        assert abs(row["linear"]["score"] - 0.5) < 0.1
    assert nowhere["center_of_gravity"] is None  # no gain after layer 0 to weigh
    words = nowhere["recommendation"]
    assert words.startswith("no layer carries it: the best probe (layer ")
    assert "does no better than on a control task" in words


def test_roles_follow_the_honest_protocol(carried, tmp_path):
    spec, store, answer = carried
    assert answer["roles"] == {"selection": "select", "report": "dev", "carved": True}
    assert answer["examples"] == {"train": 450, "selection": 150, "report": 300}  # 1/4 cap
    dev = _config(spec, store, selection="dev", epochs=2, seeds=2)
    assert run_layers(dev)["roles"] == {"selection": "dev", "report": "dev", "carved": False}
    root = tmp_path / "with-test"
    spec3, store3 = planted(root, CARRIER, (("train", 200), ("dev", 60), ("test", 60)))
    three = run_layers(_config(spec3, store3, epochs=2, seeds=2))
    assert three["roles"] == {"selection": "dev", "report": "test", "carved": False}
    assert three["examples"] == {"train": 200, "selection": 60, "report": 60}
    assert set(three["featuresets"]) == {"train", "dev", "test"}


def test_a_finished_sweep_is_read_back_and_another_in_its_place_refused(carried, monkeypatch):
    spec, store, answer = carried
    out = store.parent / "out"
    saved = json.loads((out / "layers.json").read_text())
    assert saved == answer and (out / "layers.md").is_file() and (out / "layers.png").is_file()
    assert saved["key"] == layers_key(_config(spec, store))

    def no_training(*args, **kwargs):
        raise AssertionError("trained again")

    monkeypatch.setattr("snowfire.compare.layers.run._sweep", no_training)
    assert run_layers(_config(spec, store, out)) == answer
    with pytest.raises(ValueError, match=r"layers.json holds another sweep \(key [0-9a-f]{32}"):
        run_layers(_config(spec, store, out, seeds=2))


def test_features_named_by_a_set_id_give_the_same_key(carried):
    from snowfire.cache import open_reader

    spec, store, answer = carried
    by_id = _config(spec, store, encoder=None, featureset=answer["featuresets"]["train"])
    assert layers_key(by_id) == answer["key"]
    dev = [fs for fs in open_reader(str(store)).list_featuresets() if fs.split == "dev"][0]
    assert layers_key(_config(spec, store, encoder=None, featureset=dev.id)) == answer["key"]


def test_missing_or_foreign_features_are_named_with_the_command_that_makes_them(tmp_path):
    spec, store = planted(tmp_path / "a", CARRIER, (("train", 40), ("dev", 20)))
    other, _ = planted(tmp_path / "b", CARRIER, (("train", 40), ("dev", 20)), seed=1)
    with pytest.raises(ValueError, match=r"no features of planted/train \(as its file is now\)"):
        run_layers(_config(other, store))  # the same task name, other files: other texts
    with pytest.raises(ValueError, match=r"snowfire extract --encoder planted --task-spec SPEC"):
        run_layers(_config(other, store))
    few, few_store = planted(tmp_path / "few", CARRIER, (("train", 3), ("dev", 5)), seed=1)
    with pytest.raises(ValueError, match=r"planted: 3 training examples leave no selection"):
        run_layers(_config(few, few_store))
    with pytest.raises(ValueError, match=r"LayersConfig.featureset: .*no-such-set"):
        run_layers(_config(spec, store, encoder=None, featureset="no-such-set"))
    with pytest.raises(ValueError, match=r"no features of planted/train .* by minilm"):
        run_layers(_config(spec, store, encoder="minilm"))
    with pytest.raises(ValueError, match=r"give either 'encoder' .* or 'featureset' .*, not both"):
        _config(spec, store, featureset="x")
    with pytest.raises(ValueError, match=r"LayersConfig.seeds: expected >= 1, got 0"):
        _config(spec, store, seeds=0)


def test_snowfire_layers_returns_the_typed_answer(carried):
    import snowfire

    spec, store, answer = carried
    out = store.parent / "out"
    result = snowfire.layers(_config(spec, store, out))  # finished there: read back
    assert isinstance(result, snowfire.LayersResult) and result.answer == answer
    assert (result.best_layer, result.carrying, result.carries) == (CARRIER, [CARRIER], True)
    assert result.recommendation == answer["recommendation"] and result.out == out
    row = result.layers[CARRIER]
    assert (row.layer, row.linear.value, row.linear.low) == (
        CARRIER,
        answer["layers"][CARRIER]["linear"]["score"],
        answer["layers"][CARRIER]["linear"]["low"],
    )
    assert len(row.linear.seeds) == 3 and row.selectivity["mlp"].value > 0.3
    assert result.expected_layer == answer["expected_layer"] and len(result.cumulative) == 5
    assert result.table() == (out / "layers.md").read_text()
    assert snowfire.LayersResult.from_out(out) == result
    with pytest.raises(TypeError, match=r"snowfire.layers: expected a LayersConfig .* got dict"):
        snowfire.layers({"task": "sst2"})
