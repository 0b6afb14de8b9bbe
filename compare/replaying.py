"""`snowfire compare --replay`: the race's decisions recomputed from an OUT's recorded runs,
without training (compare/racing.py `replay`): each task's arms' cells as OUT/results.json
lists them, raced again on their recorded selection predictions under the race's rule
(compare/race.py's margin and η; whether an arm's leader may stop: the rule OUT's race
recorded, the earlier rule for a race recorded before it was, this command's
`--race-stops-leaders` for an OUT not raced), printed and written to OUT/replay.json:

    {"format": 1, "margin": δ, "eta": η,
     "tasks": {task: {<the race's record: rungs, epochs, seeds, decisions, stopped,
                       finished>, "matches_live": true | false | null}}}

"matches_live": whether the replay made the decisions OUT's own race recorded (null: OUT was
not raced, e.g. `--no-race`, and the replay says what the race would have decided). Cells
that could not race (a 🔥 grid: RUN/grid/) are left out, as the live race leaves them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from snowfire.rundir import RESULTS, write_json

from .cell import Cell
from .config import CompareConfig
from .race import ETA, MARGIN
from .racing import replay

#: OUT/replay.json's name and format version.
REPLAY = "replay.json"
REPLAY_FORMAT = 1


def replay_compare(cfg: CompareConfig) -> dict[str, Any]:
    """Replay the race of every task of OUT/results.json; OUT/replay.json's record."""
    path = Path(cfg.out) / RESULTS
    if not path.is_file():
        raise ValueError(
            f"compare --replay: expected a finished comparison's {path}, got none; run the "
            "comparison first"
        )
    results = json.loads(path.read_text())
    tasks: dict[str, Any] = {}
    for task, summary in results["tasks"].items():
        cells = [Cell.from_json(c) for c in results["cells"] if c["task"] == task]
        cells = [c for c in cells if c.mode.is_arm and not (Path(c.run) / "grid").is_dir()]
        live = summary.get("race")
        # the live race's rule (a record from before the rule was recorded: the earlier rule);
        # OUT not raced: this command's
        keep = live.get("keep_leaders", False) if live else not cfg.race_stops_leaders
        kind = results["task_specs"][task]["kind"]
        record = replay(cells, summary["metric"], kind, keep_leaders=keep)
        matches = None if not live else live["decisions"] == record.get("decisions")
        tasks[task] = record | {"matches_live": matches}
        _show(task, tasks[task])
    out = {"format": REPLAY_FORMAT, "margin": MARGIN, "eta": ETA, "tasks": tasks}
    write_json(Path(cfg.out) / REPLAY, out)
    print(f"replay in {Path(cfg.out) / REPLAY}", flush=True)
    return out


def _show(task: str, record: dict[str, Any]) -> None:
    """The replayed decisions of one task, one line each, then who ran to the end."""
    if not record.get("decisions") and not record.get("finished"):
        print(f"compare {task}: nothing to replay (no arm's run could race)", flush=True)
        return
    for d in record["decisions"]:
        state = "stopped" if d["stopped"] else "kept"
        print(
            f"compare {task} rung {d['rung']}: {d['trial']} {state}, Δ vs {d['against']} "
            f"{100 * d['delta']:+.1f} [{100 * d['low']:+.1f}, {100 * d['high']:+.1f}]",
            flush=True,
        )
    live = {None: "OUT was not raced", True: "the live race's", False: "differ from the live race"}
    print(
        f"compare {task}: ran to the end: {', '.join(record['finished'])}; decisions: "
        f"{live[record['matches_live']]}",
        flush=True,
    )
