"""The zero-training baseline beside ❄️ and 🔥 in `snowfire compare`: what a user gets without
training anything, so a trained answer can be seen to beat it (or not).

    regression of pairs         cosine of the mean-pooled texts on the encoder's last layer, pairs
    (STS-B, SICK-R)             encoded separately (heads/baseline.py): the sentence-embedding
                                answer; the dev/test features are extracted where missing
    classification              the training split's most frequent label, predicted for all
    tagging                     none: every token "O" scores span F1 0, which says nothing
    regression of one text      none: a constant prediction has no correlation

Scored with the task's own metrics on dev, and on test where the data directory has labels.
OUT/baseline/<task>.json keeps the result, each example's prediction (the verdict's bootstrap
weighs them against the trained sides') and what made it, so a rerun computes nothing.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from .config import CompareConfig

METHODS = {
    "regression": "cosine of mean-pooled texts, last layer (pairs encoded separately)",
    "classification": "majority label of the training split",
}


def method(spec) -> str | None:
    """The no-training answer for a task of this kind, or None where none says anything."""
    if spec.kind == "regression" and not spec.pair:
        return None
    return METHODS.get(spec.kind)


def why_none(spec) -> str:
    """Why a task of this kind has no no-training row (what the table says in its place)."""
    if spec.kind == "tagging":
        return 'none for tagging: every token "O" scores span F1 0, which says nothing'
    return "none for the regression of one text: a constant prediction has no correlation"


def run_baseline(cfg: CompareConfig, task: str, store: str) -> dict[str, Any] | None:
    """{"method", "seconds", "dev": {metric: value}, "test": ...}, or None for a task without
    a no-training answer (tagging, regression of one text)."""
    import time

    from snowfire.cache import versions
    from snowfire.rundir import write_json
    from snowfire.tasks import available_splits, describe

    spec = cfg.specs[task]
    how = method(spec)
    if how is None:
        return None
    path = Path(cfg.out) / "baseline" / f"{task}.json"
    files = {s: v["sha256"] for s, v in describe(spec, cfg.data)["splits"].items()}
    made_by = {
        "encoder": cfg.encoder,
        "data": cfg.data,
        "store": store,
        "method": how,
        "files": files,
    }
    if path.is_file():
        kept = json.loads(path.read_text())
        if kept.get("made_by") == made_by and "predictions" in kept:  # older files lack them
            return kept
    started = time.perf_counter()
    splits = [s for s in available_splits(spec, cfg.data) if s != "train"]
    scored = (
        _cosine(cfg, spec, store, splits)
        if spec.kind == "regression"
        else _majority(spec, cfg.data, splits)
    )
    result = {
        "method": how,
        **scored,
        "seconds": round(time.perf_counter() - started, 2),
        "made_by": made_by,
        "versions": versions(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, result)
    return result


def _labelled(spec, data: str | None, split: str) -> list | None:
    from snowfire.tasks import read_split

    gold = [e.label for e in read_split(spec, data, split)]
    return None if any(g is None for g in gold) else gold


def _majority(spec, data: str | None, splits: list[str]) -> dict[str, Any]:
    from snowfire.tasks import evaluate

    counts = Counter(_labelled(spec, data, "train") or [])
    if not counts:
        raise ValueError(f"compare {spec.name}: the training split has no labels to count")
    label = min(counts, key=lambda k: (-counts[k], k))  # the most frequent; ties by name
    out: dict[str, Any] = {"label": label, "predictions": {}}
    for split in splits:
        gold = _labelled(spec, data, split)
        if gold:
            out["predictions"][split] = [label] * len(gold)
            out[split] = evaluate(spec, gold, out["predictions"][split])
    return out


def _cosine(cfg: CompareConfig, spec, store: str, splits: list[str]) -> dict[str, Any]:
    from snowfire.cache import open_reader
    from snowfire.heads import cosine_scores
    from snowfire.tasks import evaluate

    from .run import find_or_extract

    out: dict[str, Any] = {"layer": -1, "predictions": {}}
    for split in splits:
        gold = _labelled(spec, cfg.data, split)
        if not gold:
            continue
        info = find_or_extract(
            cfg.encoder,
            store,
            spec,
            cfg.data,
            split,
            "separate",
            device=cfg.device,
            progress=cfg.progress,
            who="compare",
        )
        pred = cosine_scores(open_reader(store), info).tolist()
        out["predictions"][split] = pred  # per example: the verdict's bootstrap weighs them
        out[split] = evaluate(spec, [float(g) for g in gold], pred)
    return out
