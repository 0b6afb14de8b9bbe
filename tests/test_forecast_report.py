"""compare/forecast_report.py: a budget-limited verdict's curves fitted and Δ forecast at 2×
and 4× the budget, on constructed saturating curves whose asymptotes are known."""

from __future__ import annotations

import pytest

from snowfire.compare.forecast_report import budget_forecast, forecast_lines, side_curve


def _entries(a, b, c, epochs, seeds=2, jitter=0.0):
    """Seeds' curves y = a − b·e^(−c) (seed k shifted by ±jitter: the mean is the curve)."""
    return [
        {"seed": k, "curve": [[e, a - b * e ** (-c) + (jitter if k else -jitter)] for e in epochs]}
        for k in range(seeds)
    ]


def test_side_curve_is_the_seeds_mean_on_their_shared_points_scaled_to_the_budget():
    entries = [
        {"seed": 0, "curve": [[1, 0.5], [2, 0.6], [4, 0.7]]},
        {"seed": 1, "curve": [[1, 0.7], [2, 0.8]]},  # stopped early: 4 is not shared
    ]
    x, y = side_curve(entries)
    assert x == [0.5, 1.0]
    assert y == pytest.approx([0.6, 0.7], abs=1e-12)


def test_a_forecast_of_two_saturating_curves_recovers_their_gap():
    epochs = [1, 2, 3, 4, 5, 6]
    verdict = {
        "curves": {
            "snow": _entries(0.80, 0.30, 1.0, epochs, jitter=0.01),
            "fire": _entries(0.90, 0.50, 1.0, epochs, jitter=0.01),
        }
    }
    out = budget_forecast(verdict)
    assert out["factors"] == [2.0, 4.0]
    for f in out["forecasts"]:
        x = 6 * f["factor"]  # the true curves at factor × the 6 epochs reached
        true = (0.90 - 0.50 / x) - (0.80 - 0.30 / x)
        # exact points, but c is fitted on a grid (forecast.py: 60 log-spaced rates): 2e-3
        assert f["delta"] == pytest.approx(true, abs=2e-3)
        assert f["low"] <= f["delta"] <= f["high"]
    text = forecast_lines({"t": {"verdict": verdict | {"forecast": out}}})
    assert text[-1].startswith("- **t**: at 2× Δ +")


def test_too_few_points_say_there_is_no_forecast():
    verdict = {
        "curves": {
            "snow": _entries(0.8, 0.3, 1.0, [1, 2, 3]),
            "fire": _entries(0.9, 0.5, 1.0, [1, 2, 3, 4]),
        }
    }
    out = budget_forecast(verdict)
    assert out == {
        "none": "snow's curve: fit_curve: expected at least 4 points of (x, y) to fit 3 "
        "parameters, got 3 x and 3 y"
    }
    assert forecast_lines({"t": {"verdict": verdict | {"forecast": out}}})[-1].startswith(
        "- **t**: no forecast (snow's curve"
    )
