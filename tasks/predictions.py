"""Predictions of a run (❄️ head or 🔥 fine-tuning), one format for both.

RUN/predictions/<split>.tsv: `index<TAB>gold<TAB>predicted` with that header (gold empty for an
unlabelled split); for tagging, CoNLL lines `token gold predicted` with a blank line after each
sentence. `read_predictions` gives back exactly what `tasks.evaluate` was given;
`parse_predictions` the rows as written (experiments/carry.py strips and restores them).
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


def gold_text(kind: str, example) -> str | tuple[str, ...]:
    """An example's gold as a predictions file writes it: for tagging one tag per word ("" each
    when untagged), else its label ("" when unlabelled)."""
    if kind == "tagging":
        return tuple(example.tags) if example.tags is not None else ("",) * len(example.words_a)
    return "" if example.label is None else str(example.label)


def format_predictions(spec, examples, preds: list) -> str:
    """A predictions file's text (`write_predictions`): one row per example, gold from it."""
    out = []
    if spec.kind == "tagging":
        for ex, seq in zip(examples, preds, strict=True):
            for word, g, p in zip(ex.words_a, gold_text(spec.kind, ex), seq, strict=True):
                out.append(f"{word} {g} {p}\n")
            out.append("\n")
        return "".join(out)
    out.append(PREDICTIONS_HEADER + "\n")
    for ex, pred in zip(examples, preds, strict=True):
        out.append(f"{ex.index}\t{gold_text(spec.kind, ex)}\t{pred}\n")
    return "".join(out)


def parse_predictions(text: str, kind: str) -> list:
    """A predictions file's rows as written (`format_predictions`), strings: (index, gold,
    predicted) after the header, or for tagging one list per sentence of (word, gold,
    predicted), an empty sentence kept. ValueError names the line that breaks the format."""
    lines = text.split("\n")
    if lines[-1] != "":
        raise ValueError(f"line {len(lines)}: the file ends without a newline (cut short?)")
    if kind != "tagging":
        if lines[0] != PREDICTIONS_HEADER:
            raise ValueError(
                f"line 1: expected the header {PREDICTIONS_HEADER!r}, got {lines[0]!r}"
            )
        return [_fields(line, "\t", n) for n, line in enumerate(lines[1:-1], 2)]
    sentences: list[list[tuple[str, ...]]] = [[]]
    for n, line in enumerate(lines[:-1], 1):
        if line:
            sentences[-1].append(_fields(line, " ", n))
        else:
            sentences.append([])
    if sentences.pop():
        raise ValueError(f"line {len(lines) - 1}: the last sentence has no blank line after it")
    return sentences


def _fields(line: str, sep: str, n: int) -> tuple[str, ...]:
    """A row's three fields; a tagging row's word may hold spaces (a JSON token list's can),
    its tags never do."""
    got = tuple(line.rsplit(sep, 2) if sep == " " else line.split(sep))
    if len(got) != 3:
        what = "word gold predicted" if sep == " " else "index, gold, predicted"
        raise ValueError(f"line {n}: expected 3 fields ({what}), got {len(got)}: {line!r}")
    return got


def read_predictions(path: Path, kind: str) -> tuple[list, list]:
    """(gold, predicted) back from a predictions file, in `tasks.evaluate`'s form."""
    try:
        rows = parse_predictions(Path(path).read_text(encoding="utf-8"), kind)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from err
    if kind == "tagging":
        return [[g for _, g, _ in s] for s in rows], [[p for _, _, p in s] for s in rows]
    cast = float if kind == "regression" else str
    return [cast(g) for _, g, _ in rows], [cast(p) for _, _, p in rows]
