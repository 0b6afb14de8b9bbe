"""Metrics against scipy / scikit-learn on random inputs, and hand-computed edge cases."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as skm

from snowfire.tasks import accuracy, binary_f1, macro_f1, matthews_corrcoef, pearson, spearman
from snowfire.tasks.metrics import average_ranks

TOL = 1e-12


@pytest.mark.parametrize("seed", range(20))
def test_classification_metrics_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    k = int(rng.integers(2, 5))
    gold = [str(x) for x in rng.integers(0, k, n)]
    pred = [str(x) for x in rng.integers(0, k, n)]
    assert accuracy(gold, pred) == pytest.approx(skm.accuracy_score(gold, pred), abs=TOL)
    assert matthews_corrcoef(gold, pred) == pytest.approx(
        skm.matthews_corrcoef(gold, pred), abs=TOL
    )
    expected_f1 = skm.f1_score(gold, pred, labels=["1"], average="micro", zero_division=0)
    assert binary_f1(gold, pred, positive="1") == pytest.approx(expected_f1, abs=TOL)
    expected_macro = skm.f1_score(gold, pred, average="macro", zero_division=0)
    assert macro_f1(gold, pred) == pytest.approx(expected_macro, abs=TOL)


def test_macro_f1_by_hand():
    # a: TP 1, FP 0, FN 1 -> 2/3; b: TP 1, FP 1, FN 0 -> 2/3; c: never gold, predicted once -> 0
    gold, pred = list("aabd"), list("abbc")
    # d: gold once, never predicted -> 0; mean over a, b, c, d
    assert macro_f1(gold, pred) == pytest.approx((2 / 3 + 2 / 3 + 0 + 0) / 4, abs=TOL)
    assert macro_f1(list("ab"), list("ab")) == 1.0


@pytest.mark.parametrize("seed", range(10))
def test_binary_metrics_match_sklearn(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 300))
    gold = rng.integers(0, 2, n).tolist()
    pred = rng.integers(0, 2, n).tolist()
    assert binary_f1(gold, pred, positive=1) == pytest.approx(
        skm.f1_score(gold, pred, zero_division=0), abs=TOL
    )
    assert binary_f1(gold, pred, positive=0) == pytest.approx(
        skm.f1_score(gold, pred, pos_label=0, zero_division=0), abs=TOL
    )
    assert matthews_corrcoef(gold, pred) == pytest.approx(
        skm.matthews_corrcoef(gold, pred), abs=TOL
    )


@pytest.mark.parametrize("seed", range(20))
def test_correlations_match_scipy(seed):
    rng = np.random.default_rng(200 + seed)
    n = int(rng.integers(3, 300))
    x = rng.normal(size=n)
    y = 0.5 * x + rng.normal(size=n)
    assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-10)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-10)


@pytest.mark.parametrize("seed", range(20))
def test_spearman_with_ties_matches_scipy(seed):
    rng = np.random.default_rng(300 + seed)
    n = int(rng.integers(3, 200))
    # Scores on a 0-5 grid in 0.25 steps, like STS-B: many ties on both sides.
    x = rng.integers(0, 21, n) / 4.0
    y = np.clip(x + rng.integers(-4, 5, n) / 4.0, 0, 5)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        pytest.skip("constant draw")
    np.testing.assert_allclose(average_ranks(x), stats.rankdata(x), atol=0)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-10)


def test_average_ranks_by_hand():
    np.testing.assert_array_equal(average_ranks([10, 20, 20, 30]), [1, 2.5, 2.5, 4])
    np.testing.assert_array_equal(average_ranks([3, 1, 3, 3, 2]), [4, 1, 4, 4, 2])
    np.testing.assert_array_equal(average_ranks([7]), [1])


def test_spearman_by_hand_with_ties():
    # x ranks [1, 2.5, 2.5, 4], y ranks [1, 2, 3, 4]: centred (-1.5, 0, 0, 1.5), (-1.5,-.5,.5,1.5)
    # r = (2.25 + 2.25) / sqrt(4.5 * 5)
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(4.5 / np.sqrt(4.5 * 5), abs=TOL)


def test_degenerate_cases_are_zero_not_nan():
    assert pearson([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) == 0.0
    assert spearman([1.0, 2.0, 3.0], [2.0, 2.0, 2.0]) == 0.0
    assert matthews_corrcoef(["1", "1"], ["1", "1"]) == 0.0
    assert binary_f1(["0", "0"], ["0", "0"]) == 0.0
    assert pearson([0.0, 1.0], [0.0, 1.0]) == 1.0


def test_matthews_multiclass_by_hand():
    # C = [[2, 1], [0, 1]] as 2 classes; a 3-class case: gold a a b c, pred a b b c
    # C = [[1,1,0],[0,1,0],[0,0,1]], N = 4, c = 3, t = (2,1,1), p = (1,2,1)
    # MCC = (3*4 - (2+2+1)) / sqrt((16 - 6) * (16 - 6)) = 7 / 10
    assert matthews_corrcoef(list("aabc"), list("abbc")) == pytest.approx(0.7, abs=TOL)


@pytest.mark.parametrize(
    "fn", [accuracy, binary_f1, macro_f1, pearson, spearman, matthews_corrcoef]
)
def test_length_and_empty_errors(fn):
    with pytest.raises(
        ValueError, match=f"{fn.__name__}: expected gold and pred of the same length, got 2 and 3"
    ):
        fn([1, 0], [1, 0, 1])
    with pytest.raises(ValueError, match=f"{fn.__name__}: expected at least one example"):
        fn([], [])


def test_correlation_input_errors():
    with pytest.raises(ValueError, match="pearson: expected finite numbers for pred"):
        pearson([1.0, 2.0], [1.0, float("nan")])
    with pytest.raises(ValueError, match="spearman: expected a flat sequence of numbers for gold"):
        spearman([[1.0], [2.0]], [1.0, 2.0])
