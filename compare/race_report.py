"""The race in the report of `snowfire compare`: table.md's lines (who stopped, at which rung,
behind whom by how much) and which learning curves the plot marks as stopped."""

from __future__ import annotations

from typing import Any

from .cell import Cell


def race_section(race: dict[str, Any], snow: list[Cell], fire: list[Cell]) -> dict[str, Any]:
    """A task's race record (compare/racing.py) with the contenders the table shows for ❄️ and
    🔥 ("sides"), so that the plot can mark theirs when the race stopped them."""
    from .racing import contender

    return race | {"sides": {"snow": contender(snow[0]), "fire": contender(fire[0])}}


def stopped_side(summary_task: dict[str, Any], side: str) -> bool:
    """Whether the race stopped the contender shown for `side` ("snow" or "fire")."""
    race = summary_task.get("race") or {}
    return race.get("sides", {}).get(side) in race.get("stopped", {})


def race_lines(summary: dict[str, Any]) -> list[str]:
    """table.md's paragraph on the race: one line per task, every stop with its evidence."""
    raced = {t: s["race"] for t, s in summary.items() if s.get("race")}
    if not raced:
        return []
    some = next(iter(raced.values()))
    out = [
        "",
        f"Raced (compare/racing.py; --no-race trains every cell to its cap): the arms and "
        f"trials trained in {some['rungs']} rungs (fractions of each cap growing by "
        f"η = {some['eta']}); after each rung a contender whose 95% paired-bootstrap upper "
        f"bound on the selection split sat more than δ = {some['margin']:g} below the leader "
        "(overall, or in its own arm) stopped there"
        + (
            ", but never an arm's leading trial, so every arm's best trains to its cap"
            if some.get("keep_leaders", False)
            else ", an arm's leading trial too (the earlier rule, --race-stops-leaders)"
        )
        + ". A stopped contender keeps the score of "
        "its best epoch so far and counts with the compute it used (its run is an ordinary "
        "finished run: the table, the verdict and the budget curves read it so). Points "
        "behind: x100 of the metric.",
        "",
    ]
    for t, r in raced.items():
        stops = "; ".join(f"{name} {d['text']}" for name, d in r["stopped"].items())
        out.append(
            f"- **{t}**: "
            + (stops or "none stopped: every contender ran to its cap")
            + f"; ran to the end: {', '.join(r['finished'])}."
        )
    return out
