"""Readers for the tab-separated releases (SST-2, MNLI, MRPC, STS-B, SICK, CoLA).

Every file is split on tabs with quoting off: sentences hold bare `"` characters (MRPC, STS-B),
so a CSV reader in its default quoting mode would silently merge lines. Files with a header
are read by column name, wherever the columns sit (GLUE's 12-column MNLI layout and the
4-column sample read alike), and every row must have as many fields as the header; headerless
files (STS-B, CoLA) are read by position.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from .answers import Answers
from .example import Example
from .lines import malformed, numbered_lines, words

log = logging.getLogger(__name__)

Column = str | int  # a header name, or a 0-based field index in a headerless file


@dataclass(frozen=True)
class Layout:
    """Where a task's fields sit in its files.

    text_a, text_b, label: header names (header=True) or 0-based indices (header=False);
        text_b is None for single-sentence tasks. A label column missing from a header means
        an unlabelled file (e.g. GLUE's test.tsv): every label is then None.
    fields: headerless files only: the number of fields a line must have at least (or
        exactly, with exact=True); extra trailing fields are ignored.
    skip_label: a gold label that marks a row to skip, count and log (MNLI's "-", no
        annotator consensus), rather than a malformed row.
    """

    text_a: Column
    text_b: Column | None
    label: Column | tuple[str, ...]
    header: bool
    fields: int = 0
    exact: bool = False
    skip_label: str | None = None


LAYOUTS: dict[str, Layout] = {
    "sst2": Layout("sentence", None, "label", header=True),
    "mnli": Layout("sentence1", "sentence2", "gold_label", header=True, skip_label="-"),
    "mrpc": Layout("#1 String", "#2 String", "Quality", header=True),
    # genre, file, year, id, score, sentence1, sentence2 [, source, licence on some lines]
    "stsb": Layout(5, 6, 4, header=False, fields=7),
    # The full SICK.txt release names the judgment column "entailment_label".
    "sick-e": Layout(
        "sentence_A", "sentence_B", ("entailment_judgment", "entailment_label"), header=True
    ),
    "sick-r": Layout("sentence_A", "sentence_B", "relatedness_score", header=True),
    # source, label, original mark, sentence
    "cola": Layout(3, None, 1, header=False, fields=4, exact=True),
}


def _header_index(
    path: Path, names: list[str], wanted: Column | tuple[str, ...], required: bool
) -> int | None:
    candidates = wanted if isinstance(wanted, tuple) else (wanted,)
    for name in candidates:
        if name in names:
            return names.index(name)
    if required:
        wanted_text = " or ".join(map(repr, candidates))
        raise malformed(
            path, 1, f"expected a header with column {wanted_text}, got columns {names}"
        )
    return None


def read_tsv(answers: Answers, layout: Layout, path: Path | str) -> tuple[list[Example], int]:
    """All examples of one file, and how many rows were skipped for `layout.skip_label`."""
    path = Path(path)
    lines = numbered_lines(path)
    columns: tuple[object, object, object]
    n_fields, exact = layout.fields, layout.exact
    if layout.header:
        first = next(lines, None)
        if first is None:
            raise malformed(path, 1, "expected a header line, got an empty file")
        names = first[1].split("\t")
        columns = (
            _header_index(path, names, layout.text_a, True),
            None if layout.text_b is None else _header_index(path, names, layout.text_b, True),
            _header_index(path, names, layout.label, False),
        )
        n_fields, exact = len(names), True
        if columns[2] is None:
            log.info("%s: no %r column, reading it as unlabelled", path, layout.label)
    else:
        columns = (layout.text_a, layout.text_b, layout.label)
    # field indices: the header's (a required column raises when missing), or a headerless
    # layout's own
    i_a, i_b, i_label = cast(tuple[int, int | None, int | None], columns)

    examples: list[Example] = []
    skipped: list[int] = []
    for number, text in lines:
        fields = text.split("\t")
        if (len(fields) != n_fields) if exact else (len(fields) < n_fields):
            how = "" if exact else "at least "
            got = "an empty line" if not text.strip() else f"{len(fields)}"
            raise malformed(
                path, number, f"expected {how}{n_fields} tab-separated fields, got {got}"
            )
        label = None
        if i_label is not None:
            if layout.skip_label is not None and fields[i_label] == layout.skip_label:
                skipped.append(number)
                continue
            label = answers.label(path, number, fields[i_label], column=None)
        words_a = words(path, number, fields[i_a], "first sentence")
        words_b = None if i_b is None else words(path, number, fields[i_b], "second sentence")
        examples.append(Example(len(examples), words_a, words_b, label, line=number))
    if skipped:
        shown = ", ".join(map(str, skipped[:10])) + (", ..." if len(skipped) > 10 else "")
        log.warning(
            "%s: skipped %d rows whose label is %r (lines %s); read %d examples",
            path,
            len(skipped),
            layout.skip_label,
            shown,
            len(examples),
        )
    return examples, len(skipped)
