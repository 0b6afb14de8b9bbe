"""The MI estimator: ≈ 0 on shuffled labels, the known value on separable classes."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("sklearn")

from snowfire.compare.mi import discretise, mi_knn, reduce  # noqa: E402


def test_separated_classes_give_the_label_entropy():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 2000)
    x = rng.standard_normal((2000, 4)) + 20.0 * y[:, None]  # far apart: Y is a function of X
    assert mi_knn(x, y) == pytest.approx(math.log(2), abs=0.03)
    y3 = rng.integers(0, 3, 3000)
    x3 = rng.standard_normal((3000, 3)) + 20.0 * y3[:, None]
    assert mi_knn(x3, y3) == pytest.approx(math.log(3), abs=0.04)


def test_shuffled_labels_give_about_zero():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 2000)
    x = rng.standard_normal((2000, 8)) + 2.0 * y[:, None]
    assert mi_knn(x, y) > 0.3  # related ...
    assert mi_knn(x, rng.permutation(y)) < 0.02  # ... and not, once the labels are shuffled


def test_a_gaussian_channel_matches_its_closed_form():
    # Y uniform on {-1, +1}, X = Y + N(0, s^2) in 1-D: I = H(X) - H(X|Y), computed numerically
    rng = np.random.default_rng(2)
    s = 1.0
    y = rng.choice([-1, 1], 20000)
    x = (y + s * rng.standard_normal(20000))[:, None]
    grid = np.linspace(-8, 8, 20001)
    pdf = (
        0.5
        * (np.exp(-((grid - 1) ** 2) / 2) + np.exp(-((grid + 1) ** 2) / 2))
        / math.sqrt(2 * math.pi)
    )
    h_x = -np.sum(pdf * np.log(pdf + 1e-300)) * (grid[1] - grid[0])
    h_x_given_y = 0.5 * math.log(2 * math.pi * math.e * s**2)
    assert mi_knn(x, y) == pytest.approx(h_x - h_x_given_y, abs=0.02)


def test_reduce_and_discretise():
    rng = np.random.default_rng(3)
    (z,) = reduce([rng.standard_normal((100, 40))], dims=5)
    assert z.shape == (100, 5)
    classes = discretise(np.arange(100.0), bins=4)
    assert np.bincount(classes).tolist() == [25, 25, 25, 25]
