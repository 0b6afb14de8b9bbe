"""Predictions of a run (❄️ head or 🔥 fine-tuning), one format for both.

RUN/predictions/<split>.tsv: `index<TAB>gold<TAB>predicted` with that header (gold empty for an
unlabelled split); for tagging, CoNLL lines `token gold predicted` with a blank line after each
sentence. `read_predictions` gives back exactly what `tasks.evaluate` was given.
"""

from __future__ import annotations

from pathlib import Path

#: The header line of a non-tagging predictions file.
PREDICTIONS_HEADER = "index\tgold\tpredicted"


def gold_of(spec, examples) -> list | None:
    """Gold answers in `tasks.evaluate`'s form; None when the split has no labels."""
    if spec.kind == "tagging":
        if any(e.tags is None for e in examples):
            return None
        return [list(e.tags) for e in examples]
    if any(e.label is None for e in examples):
        return None
    if spec.kind == "regression":
        return [float(e.label) for e in examples]
    return [str(e.label) for e in examples]


def decode(spec, preds: list) -> list:
    """Model predictions (indices, floats) -> label strings, floats or tag lists."""
    if spec.kind == "tagging":
        return [[spec.labels[t] for t in seq] for seq in preds]
    if spec.kind == "regression":
        return [float(p) for p in preds]
    return [spec.labels[int(p)] for p in preds]


def write_predictions(path: Path, spec, examples, preds: list) -> None:
    """predictions/<split>.tsv (see the module docstring); floats as Python's shortest repr,
    so reading them back gives the same values and the same metrics."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(format_predictions(spec, examples, preds), encoding="utf-8")


def format_predictions(spec, examples, preds: list) -> str:
    """A predictions file's text (`write_predictions`): one row per example, gold from it."""
    out = []
    if spec.kind == "tagging":
        for ex, seq in zip(examples, preds, strict=True):
            gold = ex.tags if ex.tags is not None else [""] * len(ex.words_a)
            for word, g, p in zip(ex.words_a, gold, seq, strict=True):
                out.append(f"{word} {g} {p}\n")
            out.append("\n")
        return "".join(out)
    out.append(PREDICTIONS_HEADER + "\n")
    for ex, pred in zip(examples, preds, strict=True):
        out.append(f"{ex.index}\t{'' if ex.label is None else ex.label}\t{pred}\n")
    return "".join(out)


def read_predictions(path: Path, kind: str) -> tuple[list, list]:
    """(gold, predicted) back from a predictions file, in `tasks.evaluate`'s form."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    if kind == "tagging":
        gold: list[list[str]] = []
        pred: list[list[str]] = []
        g: list[str] = []
        p: list[str] = []
        for line in lines:
            if not line.strip():
                if g:
                    gold.append(g)
                    pred.append(p)
                    g, p = [], []
                continue
            _, gt, pt = line.split(" ")
            g.append(gt)
            p.append(pt)
        return gold, pred
    rows = [line.split("\t") for line in lines[1:] if line]
    cast = float if kind == "regression" else str
    return [cast(r[1]) for r in rows], [cast(r[2]) for r in rows]
