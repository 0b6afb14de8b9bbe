"""Which weights a comparison's staged 🔥 runs started from: arm seq's from the intermediate
run's encoder, arm lpft's from its ❄️ probe. A finished run records them by SHA-256 (RUN/
config.json "start", finetune/model.py `start_hashes`). Trained again (on another machine the
CPU kernels change the last bits, and with them the weights), the folder holds other weights
than the finished runs started from: compare refuses those runs by name, or with
--keep-remade-starts keeps them with the start they recorded. Either way the report says, per
task and arm, which starts its runs came from and how many differ from the folder's now.

    starts_section(cfg, cells) -> {"seq": {"runs": 16, "recorded": {"38a0bb…": 16},
                                           "now": "569cb6…", "remade": 16}}
    starts_lines(cfg, summary) -> table.md's lines (arms with runs from a start trained again)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .cell import Cell, Mode
from .config import CompareConfig

#: The start each staged arm's runs record, by its key in RUN/config.json "start".
STAGED = {Mode.SEQ: "encoder_weights_sha256", Mode.LPFT: "init_head_sha256"}
WHAT = {Mode.SEQ: "the intermediate run's encoder", Mode.LPFT: "their ❄️ probes"}


def starts_section(cfg: CompareConfig, cells: list[Cell]) -> dict[str, dict[str, Any]]:
    """{arm: {"runs", "recorded": {sha256: runs}, "now": {sha256: runs}, "remade": runs}} for
    the finished seq and lpft runs of `cells` (one task's): "now" what their paths hold
    today ("(gone)", "(missing)": nothing there), "remade" how many recorded another start
    than that."""
    from snowfire.finetune import encoder_sha256, probe_sha256, saved_start
    from snowfire.rundir import CONFIG

    from .run import cell_config

    now_of: dict[str, str | None] = {}  # one hash per encoder or probe, however many runs
    out: dict[str, dict[str, Any]] = {}
    for cell in cells:
        key, path = STAGED.get(cell.mode), Path(cell.run) / CONFIG
        if key is None or cell.metrics is None or not path.is_file():
            continue
        recorded = saved_start(json.loads(path.read_text())).get(key) or "(not recorded)"
        config = cell_config(cfg, cell, cfg.pair_encoding_used)
        # what the run's start is hashed from now: seq's intermediate encoder, lpft's probe
        seq = cell.mode is Mode.SEQ
        where = config.encoder if seq else str(config.init_head)
        if where not in now_of:
            now_of[where] = encoder_sha256(config) if seq else probe_sha256(where)
        now = now_of[where] or "(gone)"
        arm = out.setdefault(cell.mode.value, {"runs": 0, "recorded": {}, "now": {}, "remade": 0})
        arm["runs"] += 1
        arm["recorded"][recorded] = arm["recorded"].get(recorded, 0) + 1
        arm["now"][now] = arm["now"].get(now, 0) + 1
        arm["remade"] += recorded != now
    return out


def _hashes(counts: dict[str, int]) -> str:
    return ", ".join(f"{sha[:12]}… ({n})" for sha, n in counts.items())


def starts_lines(cfg: CompareConfig, summary: dict[str, Any]) -> list[str]:
    """The markdown saying where a task's seq or lpft runs started from other weights than
    their paths hold now (nothing where every run's start is what its path holds)."""
    lines = []
    for task, s in summary.items():
        for mode, key in STAGED.items():
            a = s.get("starts", {}).get(mode.value)
            if not a or not a["remade"]:
                continue
            kept = (
                "kept with the start they recorded (--keep-remade-starts)"
                if cfg.keep_remade_starts
                else "refused unless --keep-remade-starts"
            )
            lines.append(
                f"- **{task}**, arm {mode.value}: its {a['runs']} finished runs started from "
                f"{WHAT[mode]} with {key} {_hashes(a['recorded'])}; those paths hold "
                f"{_hashes(a['now'])} now: {a['remade']} runs started from weights trained "
                f"again since, {kept}."
            )
    if not lines:
        return []
    head = (
        "Starts trained again: a staged arm's runs (seq from the intermediate run, lpft from "
        "a probe) record the SHA-256 of the weights they started from (compare/starts.py); "
        "trained again, e.g. on another machine, the start comes out with other weights."
    )
    return ["", head, "", *lines]
