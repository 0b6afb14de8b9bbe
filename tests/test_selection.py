"""tasks/selection.py: which split selects and which reports, and the carved selection slice:
stratified, disjoint from what trains and from the report split, the same for every caller
and run seed, stable across reruns."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from snowfire.tasks import Example
from snowfire.tasks.selection import (
    SELECTION_CAP,
    SELECTION_FLOOR,
    SplitRoles,
    selection_size,
    selection_slice,
    split_off,
    split_roles,
)


def _classes(n=3000, shares=(0.7, 0.2, 0.1), seed=0):
    rng = random.Random(seed)
    labels = rng.choices(["a", "b", "c"], weights=shares, k=n)
    return [Example(i, (f"w{i}",), label=lab) for i, lab in enumerate(labels)]


@pytest.mark.parametrize(
    "labelled, selection, expected",
    [
        (["train", "dev"], "auto", SplitRoles("select", "dev", carved=True)),
        (["train", "dev", "test"], "auto", SplitRoles("dev", "test", carved=False)),
        (["train", "select", "dev"], "auto", SplitRoles("select", "dev", carved=False)),
        (["train", "select", "dev", "test"], "auto", SplitRoles("select", "test", carved=False)),
        (["train", "dev", "test"], "dev", SplitRoles("dev", "dev", carved=False)),
    ],
)
def test_the_roles(labelled, selection, expected):
    roles = split_roles(labelled, selection)
    assert roles == expected
    assert roles.honest == (selection != "dev")


def test_roles_refuse_what_cannot_be_done():
    with pytest.raises(ValueError, match=r"selection: expected one of auto, dev, got 'test'"):
        split_roles(["train", "dev"], "test")
    with pytest.raises(ValueError, match=r"missing \['dev'\]"):
        split_roles(["train", "test"])


@pytest.mark.parametrize(
    "total, size",
    [(0, 0), (3, 0), (4, 1), (40, 10), (800, 200), (2000, 200), (5749, 575), (67349, 2000)],
)
def test_the_slice_size(total, size):
    assert selection_size(total) == size
    assert SELECTION_FLOOR == 200 and SELECTION_CAP == 2000


def test_the_slice_keeps_each_class_share():
    examples = _classes()
    chosen = selection_slice(examples, "classification")
    assert len(chosen) == 300 and chosen == sorted(set(chosen))
    whole = Counter(e.label for e in examples)
    part = Counter(examples[i].label for i in chosen)
    for label, count in whole.items():  # largest remainder: within one of the exact share
        assert abs(part[label] - 300 * count / len(examples)) < 1, (label, part, whole)


def test_the_slice_keeps_each_score_quintile_share():
    rng = random.Random(1)
    examples = [Example(i, ("w",), ("v",), label=rng.uniform(0, 5) ** 2 / 5) for i in range(1000)]
    chosen = selection_slice(examples, "regression")
    scores = sorted(e.label for e in examples)
    edges = [scores[200 * k - 1] for k in range(1, 5)]
    bins = Counter(sum(examples[i].label > e for e in edges) for i in chosen)
    assert len(chosen) == 200 and all(39 <= bins[b] <= 41 for b in range(5)), bins


def test_the_slice_keeps_each_tag_profile_share():
    rng = random.Random(2)
    profiles = [("O", "O"), ("B-PER", "I-PER"), ("B-LOC", "O"), ("B-PER", "B-LOC")]
    examples = [
        Example(i, ("x", "y"), tags=rng.choices(profiles, weights=(6, 2, 1, 1))[0])
        for i in range(1200)
    ]
    chosen = selection_slice(examples, "tagging")
    whole = Counter(examples[i].tags for i in range(1200))
    part = Counter(examples[i].tags for i in chosen)
    assert len(chosen) == 200
    for tags, count in whole.items():
        assert abs(part[tags] - 200 * count / 1200) < 1


def test_the_slice_is_the_same_for_every_caller_and_stable_across_reruns():
    examples = _classes()
    first = selection_slice(examples, "classification")
    assert selection_slice(list(examples), "classification") == first
    assert selection_slice(examples, "classification", seed=1) != first  # a seed of its own


def test_split_off_keeps_train_and_slice_disjoint_and_whole():
    examples = _classes(400)
    rest, held, chosen = split_off(examples, "classification")
    assert len(held) == 100 and len(rest) == 300
    assert {e.index for e in rest}.isdisjoint(e.index for e in held)
    assert sorted(e.index for e in rest + held) == list(range(400))
    assert [e.index for e in held] == chosen
