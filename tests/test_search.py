"""compare/search.py: every arm's space in one place; draws that depend on (arm, k) alone, so a
trial is the same configuration on every task and seed and raising N keeps the first N."""

from __future__ import annotations

from collections import Counter

import pytest

from snowfire.compare.arms import ARMS
from snowfire.compare.search import (
    SPACES,
    Choice,
    LogUniform,
    describe_space,
    draw,
    snow_head,
)


def test_every_arm_has_a_space_and_the_papers_knobs():
    assert set(SPACES) == set(ARMS)
    names = {arm: {d.name for d in space} for arm, space in SPACES.items()}
    assert names["snow"] == {"head", "hidden", "dropout", "lr", "epochs"}
    for arm in ARMS[1:]:
        assert {"lr", "epochs", "warmup"} <= names[arm], arm
    assert {"lora_rank", "lora_alpha", "lora_targets"} <= names["lora"]
    assert "adapter_size" in names["adapter"] and "l2sp" in names["l2sp"]
    assert "probe_epochs" in names["lpft"]


def test_draws_are_a_function_of_the_arm_and_k_alone():
    first = [draw("lora", k) for k in range(8)]
    assert [draw("lora", k) for k in range(12)][:8] == first  # raising N keeps the first N
    assert len({tuple(sorted(d.items())) for d in first}) == 8  # distinct configurations
    assert draw("fire", 0) != draw("l2sp", 0) | {"l2sp": None}  # arms draw apart


def test_values_stay_in_their_ranges_and_cover_the_choices():
    draws = [draw(arm, k) for arm in SPACES for k in range(60)]
    for arm in SPACES:
        for dim in SPACES[arm]:
            values = [draw(arm, k)[dim.name] for k in range(60)]
            if isinstance(dim, LogUniform):
                assert all(dim.low <= v <= dim.high for v in values), (arm, dim)
                assert min(values) < dim.low * 2 and max(values) > dim.high / 2  # spread
            else:
                assert set(values) == set(dim.values), (arm, dim)  # 60 draws hit them all
    assert len(draws) == 60 * len(SPACES)


def test_a_choice_maps_the_unit_interval_evenly():
    dim = Choice("x", ("a", "b", "c"))
    counts = Counter(dim.value(i / 300) for i in range(300))
    assert counts == {"a": 100, "b": 100, "c": 100} and dim.value(1.0) == "c"
    assert LogUniform("lr", 1e-4, 1e-2).value(0.5) == pytest.approx(1e-3)


def test_snow_takes_its_heads_in_turn_the_papers_first_the_rest_drawn():
    heads = [draw("snow", k)["head"] for k in range(7)]
    assert heads == ["paper", "smallest", "mlp", "paper", "smallest", "mlp", "paper"]
    # the head takes no random number of its own: the other dimensions are the plain draws
    import numpy as np

    from snowfire.compare.search import SEARCH_SEED

    units = np.random.default_rng([SEARCH_SEED, ARMS.index("snow"), 3]).random(5)
    want = {d.name: d.value(u) for d, u in zip(SPACES["snow"][1:], units[1:], strict=True)}
    assert {k: v for k, v in draw("snow", 3).items() if k != "head"} == want
    assert describe_space("snow").startswith("head in turn paper, smallest, mlp; hidden ∈")


def test_the_head_draw_means_the_kinds_head():
    assert snow_head("paper", "classification", "bcn") == "bcn"
    assert snow_head("smallest", "regression", "esim") == "linear"
    assert snow_head("mlp", "tagging", "bilstm-crf") == "bilstm-softmax"


def test_bad_draws_are_refused():
    with pytest.raises(ValueError, match=r"unknown arm 'ice'"):
        draw("ice", 0)
    with pytest.raises(ValueError, match=r"expected a trial number >= 0, got -1"):
        draw("fire", -1)


def test_the_space_reads_as_one_line():
    assert describe_space("fire") == (
        "lr ~ log-U[1e-05, 0.0001]; epochs ∈ {2, 3, 4, 6}; warmup ∈ {0.0, 0.06, 0.1}"
    )
