"""A stated forecast where the budget could not call it (compare/forecast.py wired into the
report): for a task whose verdict is "budget-limited: no verdict", each side's learning curve
on the selection split (the seeds' mean at each point of the runs' RUN/log.jsonl, the points
all its seeds share) is fitted with y(x) = a − b·x^(−c), x the fraction of the side's own
budget it had reached (its last point is x = 1), and Δ = 🔥 − ❄️ is forecast at 2× and 4× that
budget with its 95% residual-bootstrap interval. Printed as a forecast, never as a verdict;
a curve of three points or fewer has nothing to fit and says so.

When the larger run exists (a comparison whose sides reached 2× or 4× the forecast's budgets,
each within `TOLERANCE`: the same OUT rerun with larger caps, or `--forecast-from` naming the
earlier OUT), its measured Δ is put beside the forecast (`check_forecasts`): the same quantity
the forecast extrapolated, the seeds' mean selection score of 🔥 minus ❄️ at the last point
both sides' seeds share, with the error (measured − forecast) and whether the forecast's
interval held it, so users can see how far to trust a forecast."""

from __future__ import annotations

from typing import Any

from .forecast import Forecast, fit_curve, forecast_delta, forecast_error

FACTORS = (2.0, 4.0)
#: How far (relative) a side's budget may sit from factor × the forecast's to count as that run.
TOLERANCE = 0.1


def _shared(entries: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    """(x, y): the seeds' mean score at each point every seed has, x as recorded."""
    shared = set.intersection(*({float(x) for x, _ in e["curve"]} for e in entries))
    xs = sorted(shared)
    ys = [
        sum(dict((float(x), float(y)) for x, y in e["curve"])[x] for e in entries) / len(entries)
        for x in xs
    ]
    return xs, ys


def side_curve(entries: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    """(x, y): the seeds' mean score at each point every seed has, x scaled so the last is 1."""
    xs, ys = _shared(entries)
    return [x / xs[-1] for x in xs], ys


def budget_forecast(verdict: dict[str, Any]) -> dict[str, Any]:
    """The forecast of Δ = 🔥 − ❄️ at 2× and 4× the budget ({"forecasts": [...]}), or why there
    is none ({"none": reason})."""
    fits = {}
    for side in ("snow", "fire"):
        x, y = side_curve(verdict["curves"][side])
        try:
            fits[side] = fit_curve(x, y)
        except ValueError as err:
            return {"none": f"{side}'s curve: {err}"}
    return {
        "factors": list(FACTORS),
        "forecasts": [f.to_json() for f in forecast_delta(fits["snow"], fits["fire"], FACTORS)],
        # each side's budget, its last shared point: what a larger run is measured against
        "budget": {side: _shared(verdict["curves"][side])[0][-1] for side in ("snow", "fire")},
    }


def measured(verdict: dict[str, Any]) -> tuple[dict[str, float], float] | None:
    """(each side's budget, Δ = 🔥 − ❄️ of the seeds' mean at it), None without shared points."""
    budgets, last = {}, {}
    for side in ("snow", "fire"):
        xs, ys = _shared(verdict["curves"][side])
        if not xs:
            return None
        budgets[side], last[side] = xs[-1], ys[-1]
    return budgets, last["fire"] - last["snow"]


def check_forecast(made: dict[str, Any], now: dict[str, Any], source: str) -> dict | None:
    """The forecast of verdict `made` (an earlier, smaller run's, from `source`) beside the Δ
    measured by verdict `now` when `now`'s budgets are one of its factors times `made`'s (each
    side within TOLERANCE); None when it made no forecast or `now` is not that larger run."""
    forecast = made.get("forecast") or {}
    seen = measured(now)
    if "forecasts" not in forecast or "budget" not in forecast or seen is None:
        return None
    budgets, delta = seen
    before = forecast["budget"]
    for f in forecast["forecasts"]:
        ratios = [budgets[side] / before[side] for side in ("snow", "fire")]
        if all(abs(r / f["factor"] - 1) <= TOLERANCE for r in ratios):
            return {
                "source": source,
                "factor": f["factor"],
                "budget": before,
                "measured_budget": budgets,
                "low": f["low"],
                "high": f["high"],
            } | forecast_error(Forecast(**f), delta)
    return None


def check_forecasts(summary: dict[str, Any], earlier: list[tuple[str, dict[str, Any]]]) -> None:
    """Each task's verdict in `summary` gains "forecast_check" (`check_forecast`) from the
    first of `earlier` ((source, results.json) of smaller runs) whose forecast it measures."""
    for task, s in summary.items():
        for source, results in earlier:
            made = results.get("tasks", {}).get(task, {}).get("verdict", {})
            check = check_forecast(made, s["verdict"], source)
            if check is not None:
                s["verdict"]["forecast_check"] = check
                break


def forecast_lines(summary: dict[str, Any]) -> list[str]:
    """table.md's forecasts, one line per budget-limited task, and the earlier forecasts this
    larger run measured."""
    found = {t: s["verdict"]["forecast"] for t, s in summary.items() if "forecast" in s["verdict"]}
    return _made(found) + _checked(summary)


def _checked(summary: dict[str, Any]) -> list[str]:
    checks = {t: s["verdict"].get("forecast_check") for t, s in summary.items()}
    checks = {t: c for t, c in checks.items() if c}
    if not checks:
        return []
    out = ["", "An earlier run's forecast, measured here (points, x100 of the metric):", ""]
    for t, c in checks.items():
        held = "inside" if c["covered"] else "outside"
        out.append(
            f"- **{t}**: forecast at {c['factor']:g}× (from {c['source']}) Δ "
            f"{100 * c['forecast']:+.1f} [{100 * c['low']:+.1f}, {100 * c['high']:+.1f}]; "
            f"measured {100 * c['measured']:+.1f}, error {100 * c['error']:+.1f} ({held} its "
            "interval)."
        )
    return out


def _made(found: dict[str, Any]) -> list[str]:
    if not found:
        return []
    out = [
        "",
        "Forecast where the budget could not call it (compare/forecast_report.py: each side's "
        "selection-split learning curve fitted with a − b·x^(−c), x its own budget's share; a "
        "forecast, not a verdict):",
        "",
    ]
    for t, f in found.items():
        if "none" in f:
            out.append(f"- **{t}**: no forecast ({f['none']}).")
            continue
        shown = "; ".join(
            f"at {p['factor']:g}× Δ {100 * p['delta']:+.1f} "
            f"[{100 * p['low']:+.1f}, {100 * p['high']:+.1f}]"
            for p in f["forecasts"]
        )
        out.append(f"- **{t}**: {shown}.")
    return out
