"""Reader for the CoNLL-2003 column format (`token POS chunk NER`, one token per line).

A blank line ends a sentence; a `-DOCSTART- -X- O O` line separates documents and is not a
sentence. Tags are kept as written (IOB1 in the English release); `tasks.spans` reads both
IOB1 and IOB2.
"""

from __future__ import annotations

from pathlib import Path

from .example import Example
from .lines import malformed, numbered_lines
from .registry import TaskSpec

COLUMNS = 4  # token, part of speech, syntactic chunk, named-entity tag
DOCSTART = "-DOCSTART-"


def read_conll(spec: TaskSpec, path: Path | str) -> list[Example]:
    """One Example per sentence: words_a = the token column, tags = the last (NER) column."""
    path = Path(path)
    allowed = set(spec.labels or ())
    examples: list[Example] = []
    tokens: list[str] = []
    tags: list[str] = []

    def flush() -> None:
        if tokens:
            examples.append(Example(index=len(examples), words_a=tuple(tokens), tags=tuple(tags)))
            tokens.clear()
            tags.clear()

    for number, text in numbered_lines(path):
        fields = text.split()
        if not fields:
            flush()
            continue
        if fields[0] == DOCSTART:
            flush()  # a document boundary is also a sentence boundary
            continue
        if len(fields) != COLUMNS:
            raise malformed(
                path,
                number,
                f"expected {COLUMNS} space-separated columns "
                f"(token POS chunk NER), got {len(fields)}",
            )
        if fields[-1] not in allowed:
            raise malformed(
                path, number, f"expected an NER tag in {sorted(allowed)}, got {fields[-1]!r}"
            )
        tokens.append(fields[0])
        tags.append(fields[-1])
    flush()
    return examples
