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


def _verdict(snow, fire, epochs_snow, epochs_fire):
    return {
        "curves": {
            "snow": _entries(*snow, epochs_snow, jitter=0.01),
            "fire": _entries(*fire, epochs_fire, jitter=0.01),
        }
    }


def test_a_larger_run_measures_the_forecast_made_at_its_budget():
    from snowfire.compare.forecast_report import check_forecasts

    snow, fire = (0.80, 0.30, 1.0), (0.90, 0.50, 1.0)
    made = _verdict(snow, fire, [4, 8, 12, 16, 20], [1, 2, 3, 4])  # budgets 20 and 4 epochs
    made["forecast"] = budget_forecast(made)
    assert made["forecast"]["budget"] == {"snow": 20.0, "fire": 4.0}
    bigger = _verdict(snow, fire, [8, 16, 24, 32, 40], [2, 4, 6, 8])  # 2x both
    summary = {"t": {"verdict": bigger}, "u": {"verdict": _verdict(snow, fire, [3], [3])}}
    check_forecasts(summary, [("small/results.json", {"tasks": {"t": {"verdict": made}}})])
    check = summary["t"]["verdict"]["forecast_check"]
    at2 = made["forecast"]["forecasts"][0]
    # measured by hand: the curves' means at 40 and 8 epochs (the jitter cancels in the mean)
    hand = (0.90 - 0.50 / 8) - (0.80 - 0.30 / 40)
    assert check["factor"] == 2.0 and check["source"] == "small/results.json"
    assert check["measured"] == pytest.approx(hand, abs=1e-12)
    assert check["forecast"] == at2["delta"]
    assert check["error"] == pytest.approx(hand - at2["delta"], abs=1e-12)
    assert check["covered"] == (at2["low"] <= hand <= at2["high"])
    assert "forecast_check" not in summary["u"]["verdict"]  # no forecast made for u
    line = forecast_lines(summary)[-1]
    assert line.startswith("- **t**: forecast at 2× (from small/results.json) Δ ")
    assert f"measured {100 * hand:+.1f}" in line


def test_a_run_at_another_budget_does_not_measure_the_forecast():
    from snowfire.compare.forecast_report import check_forecast

    snow, fire = (0.80, 0.30, 1.0), (0.90, 0.50, 1.0)
    made = _verdict(snow, fire, [1, 2, 3, 4], [1, 2, 3, 4])
    made["forecast"] = budget_forecast(made)
    same = _verdict(snow, fire, [1, 2, 3, 4], [1, 2, 3, 4])
    assert check_forecast(made, same, "x") is None  # 1x: not a larger run
    uneven = _verdict(snow, fire, [2, 4, 6, 8], [4, 8, 12, 16])  # 2x and 4x: no one factor
    assert check_forecast(made, uneven, "x") is None
    four = _verdict(snow, fire, [4, 8, 12, 16], [4, 8, 12, 16])
    assert check_forecast(made, four, "x")["factor"] == 4.0
    old = made | {"forecast": {k: v for k, v in made["forecast"].items() if k != "budget"}}
    assert check_forecast(old, four, "x") is None  # a forecast recorded before its budget was


def test_forecast_from_must_name_an_earlier_comparison(tmp_path):
    from snowfire.compare import CompareConfig

    base = {"encoder": "minilm", "tasks": ["stsb"], "data": "d", "out": "o"}
    with pytest.raises(ValueError, match=r"forecast_from: expected an earlier comparison's OUT"):
        CompareConfig(**base, forecast_from=str(tmp_path))
    (tmp_path / "results.json").write_text("{}")
    assert CompareConfig(**base, forecast_from=str(tmp_path)).forecast_from == str(tmp_path)
