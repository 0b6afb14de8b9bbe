"""Evaluation metrics of the tasks, in numpy only (no scipy/sklearn at import time).

Every function takes the gold values first, then the predictions, checks that both are
non-empty sequences of the same length, and returns a plain `float` in the metric's natural
range (fractions, not percentages). Degenerate inputs follow one rule: where a denominator is
zero (no positive predictions, a constant series) the score is 0.0, as in scikit-learn's
`zero_division=0` convention, never NaN, so model selection and JSON output stay well-defined.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np


def _check_pair(gold: Sequence | np.ndarray, pred: Sequence | np.ndarray, name: str) -> None:
    if len(gold) != len(pred):
        raise ValueError(
            f"{name}: expected gold and pred of the same length, got {len(gold)} and {len(pred)}"
        )
    if len(gold) == 0:
        raise ValueError(f"{name}: expected at least one example, got none")


def _as_floats(values: Sequence[float] | np.ndarray, name: str, which: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)  # (N,)
    if array.ndim != 1:
        raise ValueError(
            f"{name}: expected a flat sequence of numbers for {which}, got shape {array.shape}"
        )
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name}: expected finite numbers for {which}, got NaN or inf")
    return array


def _codes(
    gold: Sequence[Hashable], pred: Sequence[Hashable]
) -> tuple[np.ndarray, np.ndarray, int]:
    """Integer codes for the labels of both sequences (one shared code book)."""
    book: dict[Hashable, int] = {}
    g = np.array([book.setdefault(x, len(book)) for x in gold], dtype=np.int64)  # (N,)
    p = np.array([book.setdefault(x, len(book)) for x in pred], dtype=np.int64)  # (N,)
    return g, p, len(book)


def accuracy(gold: Sequence[Hashable], pred: Sequence[Hashable]) -> float:
    """Fraction of exact matches: acc = (1/N) sum_i [y_i = yhat_i]."""
    _check_pair(gold, pred, "accuracy")
    g, p, _ = _codes(gold, pred)
    return float(np.mean(g == p))


def binary_f1(
    gold: Sequence[Hashable], pred: Sequence[Hashable], positive: Hashable = "1"
) -> float:
    """F1 of the `positive` class: F1 = 2 TP / (2 TP + FP + FN).

    This equals the harmonic mean 2PR / (P + R) of precision P = TP / (TP + FP) and recall
    R = TP / (TP + FN) whenever both are defined; with TP = 0 the score is 0.0. Every label
    other than `positive` counts as negative (GLUE's MRPC F1 uses positive = "1").
    """
    _check_pair(gold, pred, "binary_f1")
    g = np.array([x == positive for x in gold], dtype=bool)  # (N,)
    p = np.array([x == positive for x in pred], dtype=bool)  # (N,)
    tp = int(np.sum(g & p))
    fp = int(np.sum(~g & p))
    fn = int(np.sum(g & ~p))
    return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


def macro_f1(gold: Sequence[Hashable], pred: Sequence[Hashable]) -> float:
    """Unweighted mean of the per-class F1 over every class in gold or pred:

        macro-F1 = (1/K) sum_k 2 TP_k / (2 TP_k + FP_k + FN_k)

    (scikit-learn's `f1_score(average="macro")` with its default label set). A class never
    predicted and never gold does not count; a class with TP_k = 0 scores 0.0.
    """
    _check_pair(gold, pred, "macro_f1")
    g, p, k = _codes(gold, pred)
    tp = np.bincount(g[g == p], minlength=k).astype(np.float64)  # (K,)
    gold_n = np.bincount(g, minlength=k)  # (K,) = TP + FN
    pred_n = np.bincount(p, minlength=k)  # (K,) = TP + FP
    # 2 TP / (2 TP + FP + FN) = 2 TP / (gold_n + pred_n); every class here has one of them > 0
    return float(np.mean(2 * tp / (gold_n + pred_n)))


def pearson(gold: Sequence[float] | np.ndarray, pred: Sequence[float] | np.ndarray) -> float:
    """Pearson's linear correlation.

        r = sum_i (x_i - xbar)(y_i - ybar) / sqrt(sum_i (x_i - xbar)^2 * sum_i (y_i - ybar)^2)

    0.0 when either series is constant (the denominator vanishes; scipy returns NaN there).
    """
    _check_pair(gold, pred, "pearson")
    x = _as_floats(gold, "pearson", "gold")
    y = _as_floats(pred, "pearson", "pred")
    dx, dy = x - x.mean(), y - y.mean()  # (N,), (N,)
    sxx, syy = float(dx @ dx), float(dy @ dy)
    if sxx == 0.0 or syy == 0.0:
        return 0.0
    r = float(dx @ dy) / np.sqrt(sxx * syy)
    return max(-1.0, min(1.0, float(r)))  # rounding can step just outside [-1, 1]


def average_ranks(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Ranks 1..N of `values`, tied values sharing the mean of the ranks they span.

    E.g. [10, 20, 20, 30] -> [1, 2.5, 2.5, 4] (scipy.stats.rankdata's "average" method).
    """
    x = np.asarray(values, dtype=np.float64)  # (N,)
    order = np.argsort(x, kind="stable")  # (N,)
    sorted_x = x[order]  # (N,)
    # Start of each run of equal values in sorted order, and the run each position belongs to.
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])  # (G,)
    ends = np.r_[starts[1:], len(x)]  # (G,)
    run_rank = (starts + 1 + ends) / 2.0  # mean of ranks starts+1 .. ends, (G,)
    run_of = np.repeat(np.arange(len(starts)), ends - starts)  # (N,)
    ranks = np.empty(len(x), dtype=np.float64)  # (N,)
    ranks[order] = run_rank[run_of]
    return ranks


def spearman(gold: Sequence[float], pred: Sequence[float]) -> float:
    """Spearman's rank correlation: Pearson's r of the average ranks (ties share a rank).

        rho = pearson(rank(x), rank(y))

    With ties this is the exact definition (the shortcut 1 - 6 sum d_i^2 / (N (N^2 - 1)) holds
    only without ties). 0.0 when either series is constant.
    """
    _check_pair(gold, pred, "spearman")
    x = _as_floats(gold, "spearman", "gold")
    y = _as_floats(pred, "spearman", "pred")
    return pearson(average_ranks(x), average_ranks(y))


def matthews_corrcoef(gold: Sequence[Hashable], pred: Sequence[Hashable]) -> float:
    """Matthews correlation coefficient, with Gorodkin's (2004) K-class generalisation.

    With the confusion matrix C (C_ij = #{gold i, predicted j}), N = sum C, c = trace C,
    t_k = sum_j C_kj (gold count of class k) and p_k = sum_i C_ik (predicted count):

        MCC = (c N - t.p) / sqrt((N^2 - p.p) (N^2 - t.t))

    For two classes this is (TP TN - FP FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)), the CoLA
    metric. 0.0 when gold or pred holds a single class (the denominator vanishes).
    """
    _check_pair(gold, pred, "matthews_corrcoef")
    g, p, k = _codes(gold, pred)
    confusion = np.zeros((k, k), dtype=np.float64)  # (K, K)
    np.add.at(confusion, (g, p), 1.0)
    t = confusion.sum(axis=1)  # (K,)
    q = confusion.sum(axis=0)  # (K,)
    n = float(len(g))
    c = float(np.trace(confusion))
    denominator = np.sqrt((n * n - q @ q) * (n * n - t @ t))
    if denominator == 0.0:
        return 0.0
    return float((c * n - t @ q) / denominator)
