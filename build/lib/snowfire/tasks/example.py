"""One example of a task split: the words of one text (or a pair) and its gold answer."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Example:
    """One example, as every reader returns it.

    index:   position in its split (0-based, counting only the examples returned)
    words_a: words of the first text (`str.split()` of the sentence; CoNLL's token column)
    words_b: words of the second text of a pair task, else None
    label:   class name (str) for classification, score (float) for regression, None for
             tagging tasks and for unlabelled files (e.g. a test split without gold labels)
    tags:    one tag per word of `words_a` for tagging tasks, else None
    line:    where it was read: the 1-based line of a text file (a sentence's first line in a
             CoNLL file), "row N" of a Parquet file or a dataset; None when not from a file.
             Not part of the example's equality (the same example read from two formats is
             equal)
    """

    index: int
    words_a: tuple[str, ...]
    words_b: tuple[str, ...] | None = None
    label: str | float | None = None
    tags: tuple[str, ...] | None = None
    line: int | str | None = field(default=None, compare=False)
