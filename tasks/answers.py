"""What a split's gold answers may be, and the check of each one as it is read.

`Answers.of(spec)` holds a task's kind, labels and score range; a reader asks it for each row's
label (`label`) or tag sequence (`tags`) and gets the answer, or a ValueError naming the file,
line, column, what was expected and what was found. Labels and ranges inferred from the train
split say so in the error (a dev label never seen in train is the user's to fix)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from .lines import malformed
from .spec import TaskSpec

Column = str | int | None  # a header name, a 0-based field index, or None (not named)


@dataclass(frozen=True)
class Answers:
    """kind: the task's; labels: the allowed labels or tags (None: any, when inferring them);
    score_range: (low, high) or None; inferred: which of the two came from the train split;
    bio: tags must be O, B-TYPE or I-TYPE (the span_f1 metric reads chunks)."""

    kind: str
    labels: tuple[str, ...] | None = None
    score_range: tuple[float, float] | None = None
    inferred: tuple[str, ...] = ()
    bio: bool = False

    @classmethod
    def of(cls, spec: TaskSpec) -> Answers:
        return cls(
            kind=spec.kind,
            labels=None if spec.labels is None else tuple(spec.labels),
            score_range=spec.score_range,
            inferred=spec.inferred,
            bio=spec.kind == "tagging" and spec.metric == "span_f1",
        )

    def label(self, path: Path | str, line: int | str, value: object, column: Column = "label"):
        """A classification label (str) or a regression score (float) from one field."""
        where = _where(column)
        if self.kind == "regression":
            return self._score(path, line, value, where)
        text = _label_text(value)
        if text is None:
            raise malformed(
                path, line, f"{where}expected a label (a string or a number), got {value!r}"
            )
        if not text:
            raise malformed(path, line, f"{where}expected a label, got an empty field")
        self._allowed(path, line, text, where, "label")
        return text

    def _score(self, path, line, value, where) -> float:
        try:
            score = float(value) if not isinstance(value, bool) else math.nan
        except (TypeError, ValueError):
            score = math.nan
        if self.score_range is None:
            if not math.isfinite(score):
                raise malformed(path, line, f"{where}expected a numeric score, got {value!r}")
            return score
        low, high = self.score_range
        if not low <= score <= high:  # also refuses NaN, and what is not a number
            note = (
                " (the range of the train split's scores; give score_range in the spec to widen it)"
                if "score_range" in self.inferred
                else ""
            )
            raise malformed(
                path, line, f"{where}expected a score in [{low:g}, {high:g}]{note}, got {value!r}"
            )
        return score

    def tags(self, path: Path | str, line: int | str, values, column: Column = "tags"):
        """One tag per word, each a string (a number is taken as its string)."""
        out = []
        for value in values:
            text = _label_text(value)
            if not text:
                raise malformed(path, line, f"{_where(column)}expected a tag, got {value!r}")
            self._allowed(path, line, text, _where(column), "tag")
            out.append(text)
        return tuple(out)

    def _allowed(self, path, line, text: str, where: str, what: str) -> None:
        if self.labels is not None and text not in self.labels:
            if "labels" in self.inferred:
                raise malformed(
                    path,
                    line,
                    f"{where}{what} {text!r} never seen in the train split (train "
                    f"has {', '.join(self.labels)}; list every {what} under labels: in the "
                    "spec to allow it)",
                )
            raise malformed(
                path, line, f"{where}expected a {what} in {list(self.labels)}, got {text!r}"
            )
        if self.bio and what == "tag" and not _is_bio(text):
            raise malformed(
                path,
                line,
                f"{where}expected a BIO/IOB tag (O, B-TYPE or I-TYPE: the span_f1 "
                f"metric reads chunks; use metric: accuracy for other tags), got {text!r}",
            )


def _where(column: Column) -> str:
    """How an error names the field: a header name, a field index, or nothing."""
    if column is None or column == "":
        return ""
    return f"field {column}: " if isinstance(column, int) else f"column {column!r}: "


def _label_text(value: object) -> str | None:
    """A label's text: strings as they are (stripped), integers (and integral floats: a JSON
    reader may widen 1 to 1.0) as their decimal string, booleans as true/false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return str(int(value)) if value.is_integer() else repr(value)
    return None


def _is_bio(tag: str) -> bool:
    if tag == "O":
        return True
    prefix, dash, kind = tag.partition("-")
    return prefix in ("B", "I") and bool(dash) and bool(kind)
