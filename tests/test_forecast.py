"""compare/forecast.py: a saturating power law recovered from points made by one, a forecast
whose interval holds the true value, and refusals for what cannot be fitted."""

from __future__ import annotations

import numpy as np
import pytest

from snowfire.compare.forecast import fit_curve, forecast_delta, forecast_error


def _curve(a, b, c, xs):
    return [a - b * x ** (-c) for x in xs]


def test_an_exact_power_law_is_recovered():
    xs = [1, 2, 3, 4, 6, 8]
    fit = fit_curve(xs, _curve(0.85, 0.2, 0.7, xs), replicates=20)
    assert fit.a == pytest.approx(0.85, abs=2e-3) and fit.b == pytest.approx(0.2, abs=5e-3)
    assert fit.c == pytest.approx(0.7, rel=0.05)  # on the grid of c: within its spacing
    assert fit.predict(16) == pytest.approx(0.85 - 0.2 * 16**-0.7, abs=2e-3)


def test_a_noisy_curve_forecast_holds_the_truth():
    rng = np.random.default_rng(0)
    xs = np.arange(1, 9)
    truth = {"snow": (0.80, 0.05, 1.0), "fire": (0.88, 0.25, 0.5)}  # fire still climbing
    fits = {
        arm: fit_curve(xs, np.array(_curve(*p, xs)) + rng.normal(0, 0.003, len(xs)), seed=1)
        for arm, p in truth.items()
    }
    f2, f4 = forecast_delta(fits["snow"], fits["fire"])
    assert (f2.factor, f2.at, f4.at) == (2.0, 16.0, 32.0)
    for f in (f2, f4):
        true = _curve(*truth["fire"], [f.at])[0] - _curve(*truth["snow"], [f.at])[0]
        assert f.low <= true <= f.high, (f, true)
        assert f.low < f.delta < f.high
    record = forecast_error(f2, 0.02)
    assert record["error"] == pytest.approx(0.02 - f2.delta)
    assert record["covered"] == (f2.low <= 0.02 <= f2.high)


def test_a_falling_curve_is_fitted_flat():
    xs = [1, 2, 3, 4, 5]
    fit = fit_curve(xs, [0.9, 0.8, 0.7, 0.6, 0.5], replicates=10)
    assert fit.b == 0.0 and fit.a == pytest.approx(0.7)


def test_what_cannot_be_fitted_is_refused():
    with pytest.raises(ValueError, match=r"at least 4 points .* got 3 x and 3 y"):
        fit_curve([1, 2, 3], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="expected x > 0 and finite scores"):
        fit_curve([0, 1, 2, 3], [0.1, 0.2, 0.3, 0.4])
