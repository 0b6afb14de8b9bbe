"""A stated forecast where the budget could not call it (compare/forecast.py wired into the
report): for a task whose verdict is "budget-limited: no verdict", each side's learning curve
on the selection split (the seeds' mean at each point of the runs' RUN/log.jsonl, the points
all its seeds share) is fitted with y(x) = a − b·x^(−c), x the fraction of the side's own
budget it had reached (its last point is x = 1), and Δ = 🔥 − ❄️ is forecast at 2× and 4× that
budget with its 95% residual-bootstrap interval. Printed as a forecast, never as a verdict;
a curve of three points or fewer has nothing to fit and says so."""

from __future__ import annotations

from typing import Any

from .forecast import fit_curve, forecast_delta

FACTORS = (2.0, 4.0)


def side_curve(entries: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    """(x, y): the seeds' mean score at each point every seed has, x scaled so the last is 1."""
    shared = set.intersection(*({float(x) for x, _ in e["curve"]} for e in entries))
    xs = sorted(shared)
    if not xs:
        return [], []
    ys = [
        sum(dict((float(x), float(y)) for x, y in e["curve"])[x] for e in entries) / len(entries)
        for x in xs
    ]
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
    }


def forecast_lines(summary: dict[str, Any]) -> list[str]:
    """table.md's forecasts, one line per budget-limited task."""
    found = {t: s["verdict"]["forecast"] for t, s in summary.items() if "forecast" in s["verdict"]}
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
