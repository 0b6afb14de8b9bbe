"""Which cells of a comparison were timed beside other work: OUT/load.jsonl, one line per
attempt of a cell (a whole run, or one rung of a race), written as it ends:

    {"run": RUN, "task": T, "cores": 2, "wall_seconds": 81.2, "cpu_seconds": 150.3,
     "others_cpu_seconds": 3.1, "others_share": 0.019, "shared": false}

`others_cpu_seconds` is what other processes spent on the attempt's CPUs meanwhile
(snowfire.rundir.HostLoad, from /proc/stat), so a cost column measured on a shared machine
says so rather than passing for a quiet one. An attempt killed before it ended writes no line;
the summary counts the runs with none as "not recorded". Under --ray the cells a node runs side
by side are each other's others (Ray does not pin a task to its CPUs): there "shared" says how
full the node was, as it does for any other work.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .cell import Cell

#: OUT/load.jsonl: the attempts' host load.
LOAD = "load.jsonl"


def record_attempt(out: str | Path, cell: Cell, load: dict[str, Any]) -> None:
    """Append one attempt's load (nothing where the OS did not say)."""
    if not load:
        return
    line = json.dumps({"run": cell.run, "task": cell.task, **load}, sort_keys=True)
    with open(Path(out) / LOAD, "a") as f:
        f.write(line + "\n")


def shared_cores(out: str | Path, cells: list[Cell]) -> dict[str, Any]:
    """The attempts of these cells: how many were recorded, which shared their cores (runs,
    each with its largest share), the others' CPU-hours meanwhile, and the runs never
    recorded."""
    path = Path(out) / LOAD
    lines = path.read_text().splitlines() if path.is_file() else []
    runs = {c.run for c in cells}
    mine = [rec for rec in map(json.loads, filter(str.strip, lines)) if rec["run"] in runs]
    shared: dict[str, float] = {}
    for rec in mine:
        if rec["shared"]:
            shared[rec["run"]] = max(shared.get(rec["run"], 0.0), rec["others_share"])
    return {
        "attempts": len(mine),
        "shared_attempts": sum(rec["shared"] for rec in mine),
        "shared_runs": dict(sorted(shared.items())),
        "others_cpu_hours": round(sum(rec["others_cpu_seconds"] for rec in mine) / 3600, 3),
        "not_recorded": sorted(runs - {rec["run"] for rec in mine}),
    }


def shared_text(record: dict[str, Any]) -> str:
    """table.md's words: "2 of 40 attempts shared their cores (others used up to 35%)",
    "no attempt shared its cores", and the runs never recorded."""
    if not record["attempts"]:
        return "whether other work shared the cores: not recorded"
    n, of = record["shared_attempts"], record["attempts"]
    if n:
        top = max(record["shared_runs"].values())
        text = f"{n} of {of} attempts shared their cores (others used up to {top:.0%} of them)"
    else:
        text = f"none of {of} attempts shared its cores"
    missing = len(record["not_recorded"])
    return text + (f"; {missing} runs not recorded" if missing else "")
