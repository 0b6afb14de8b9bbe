"""compare/budget_curve.py against brute force: every n-subset (Tang et al.'s estimator is
exactly their mean), every sequence of n draws with replacement (Dodge et al.'s form), hand
computations, and a constructed pair of arms whose curves cross."""

from __future__ import annotations

import itertools
import random

import pytest

from snowfire.compare.budget_curve import (
    budget_curve,
    crossings,
    describe_crossings,
    expected_best,
    expected_best_dodge,
)


def _best(trials, select, report):
    """The report score of the selection-best trial (ties: the later trial, as documented)."""
    return report[max(trials, key=lambda j: (select[j], j))]


def _cases(seed=0):
    rng = random.Random(seed)
    for big in range(1, 7):
        for _ in range(4):
            select = [rng.choice([0.1, 0.2, 0.3, rng.random()]) for _ in range(big)]  # ties
            report = [rng.random() for _ in range(big)]
            yield select, report


@pytest.mark.parametrize("select, report", list(_cases()))
def test_tang_is_the_mean_over_every_n_subset(select, report):
    big = len(select)
    for n in range(1, big + 1):
        subsets = list(itertools.combinations(range(big), n))
        brute = sum(_best(s, select, report) for s in subsets) / len(subsets)
        assert expected_best(select, report, n) == pytest.approx(brute, abs=1e-12)


@pytest.mark.parametrize("select, report", list(_cases(1))[:12])
def test_dodge_is_the_mean_over_every_sequence_drawn_with_replacement(select, report):
    big = len(select)
    for n in range(1, 4):
        draws = list(itertools.product(range(big), repeat=n))
        brute = sum(_best(d, select, report) for d in draws) / len(draws)
        assert expected_best_dodge(select, report, n) == pytest.approx(brute, abs=1e-12)


def test_hand_computed_values():
    scores = [0.0, 1.0]
    assert expected_best(scores, n=1) == 0.5 and expected_best(scores, n=2) == 1.0
    assert expected_best_dodge(scores, n=2) == pytest.approx(0.75)  # 1 - (1/2)^2
    # the selection picks trial 1 (0.9 on selection) whose report score is 0.2
    assert expected_best([0.5, 0.9], [0.7, 0.2], n=2) == pytest.approx(0.2)
    # N = 4, n = 2: (81·1 + 82·2 + 83·3) / 6
    assert expected_best([80, 81, 82, 83], n=2) == pytest.approx(494 / 6)


def test_bad_input_is_refused_with_what_was_wrong():
    with pytest.raises(ValueError, match=r"n: expected 1\.\.2 \(the trials run\), got 3"):
        expected_best([1, 2], n=3)
    with pytest.raises(ValueError, match="as many selection as report scores"):
        expected_best([1, 2], [1], n=1)
    with pytest.raises(ValueError, match="must be finite"):
        expected_best([1, float("nan")], n=1)
    with pytest.raises(ValueError, match=r"costs: expected one per trial \(2\), got 1"):
        budget_curve([1, 2], [1, 2], [3.0])


def test_the_curve_its_band_and_its_compute():
    curve = budget_curve([80, 81, 82, 83], [80, 81, 82, 83], [1, 1, 2, 2], fixed=0.5, boot=200)
    assert curve.n == (1, 2, 3, 4)
    assert curve.mean == pytest.approx((81.5, 494 / 6, 82.75, 83.0))
    assert curve.compute == pytest.approx((2.0, 3.5, 5.0, 6.5))  # 0.5 + n · 1.5
    assert all(lo <= m <= hi for lo, m, hi in zip(curve.low, curve.mean, curve.high, strict=True))
    assert curve.low[0] < curve.mean[0] < curve.high[0]  # resampling moves the mean of 4
    assert curve.at(1.9) is None and curve.at(3.5) == pytest.approx(494 / 6)
    flat = budget_curve([1, 2], [1, 2], [1, 1], boot=0)
    assert flat.low == flat.mean == flat.high


def test_curves_that_cross_name_the_budget_where_the_leader_changes():
    # ❄️: cheap trials (1 CPU-h), 81.5 → 83; 🔥: dear ones (4 CPU-h), 81.25 → 86 (by hand:
    # at 4 CPU-h ❄️ has its 4 trials (83) and 🔥 one (81.25); at 8, 🔥's two give 85.33)
    snow = budget_curve([80, 81, 82, 83], [80, 81, 82, 83], [1] * 4, boot=0)
    fire = budget_curve([70, 84, 85, 86], [70, 84, 85, 86], [4] * 4, boot=0)
    assert crossings({"snow": snow, "fire": fire}) == [(8.0, "snow", "fire")]
    names = {"snow": "❄️", "fire": "🔥"}
    text = describe_crossings({"snow": snow, "fire": fire}, names, "CPU-h")
    assert text == "❄️ ahead from 4 CPU-h (where every arm has a trial), 🔥 from 8 CPU-h"


def test_the_sentence_starts_where_every_arm_has_a_trial():
    # "a" is cheap (0.2 CPU-h a trial) and runs alone below 0.5, where "b" fits its first
    # trial; by hand: at 0.5 a has 2 trials, E[best of 2 of 70, 71, 72, 90] = (71 + 2·72 +
    # 3·90) / 6 = 80.83 < b's 85; at 0.6 a's 3 give (72 + 3·90) / 4 = 85.5 > 85
    a = budget_curve([70, 71, 72, 90], [70, 71, 72, 90], [0.2] * 4, boot=0)
    b = budget_curve([85] * 4, [85] * 4, [0.5] * 4, boot=0)
    assert a.at(0.5) == pytest.approx(485 / 6) and a.at(0.6) == pytest.approx(85.5)
    assert crossings({"a": a, "b": b}) == [(pytest.approx(0.6), "b", "a")]
    text = describe_crossings({"a": a, "b": b}, {}, "CPU-h")
    assert text == "b ahead from 0.5 CPU-h (where every arm has a trial), a from 0.6 CPU-h"


def test_close_crossings_are_printed_apart():
    # by hand: a (0.56 CPU-h a trial) 80 → 86.67 → 90; b (0.57) 85 → 91.67 → 95: b leads at
    # 0.57, a at 1.12 (its 2 trials), b at 1.14; two significant digits would print 1.1 twice
    a = budget_curve([70, 80, 90], [70, 80, 90], [0.56] * 3, boot=0)
    b = budget_curve([75, 85, 95], [75, 85, 95], [0.57] * 3, boot=0)
    assert [(x, p, q) for x, p, q in crossings({"a": a, "b": b})] == [
        (pytest.approx(1.12), "b", "a"),
        (pytest.approx(1.14), "a", "b"),
    ]
    text = describe_crossings({"a": a, "b": b}, {}, "CPU-h")
    assert text == (
        "b ahead from 0.57 CPU-h (where every arm has a trial), a from 1.12 CPU-h,"
        " b from 1.14 CPU-h"
    )


def test_no_crossing_is_said_in_words():
    high = budget_curve([90, 91], [90, 91], [1, 1], boot=0)
    low = budget_curve([80, 81], [80, 81], [1, 1], boot=0)
    assert crossings({"a": high, "b": low}) == []
    text = describe_crossings({"a": high, "b": low}, {}, "CPU-h")
    assert text == (
        "a ahead from 1 CPU-h (where every arm has a trial) to the top of the range measured"
        " (2 CPU-h): no crossing"
    )
