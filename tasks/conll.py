"""Reader for CoNLL-style column files (CoNLL-2003: `token POS chunk NER`, one token per line).

Fields are whitespace-separated; the token and the tag are read from their 0-based field
indices (CoNLL-2003: 0 and 3). A blank line ends a sentence; a `-DOCSTART-` line separates
documents and is not a sentence. Every token line has the same number of fields (`fields`,
or the first token line's). Tags are kept as written (IOB1 in the English release);
`tasks.spans` reads both IOB1 and IOB2.
"""

from __future__ import annotations

from pathlib import Path

from .answers import Answers
from .example import Example
from .lines import malformed, numbered_lines

DOCSTART = "-DOCSTART-"


def read_conll(
    answers: Answers, path: Path | str, *, tokens: int = 0, tags: int = -1, fields: int = 0
) -> list[Example]:
    """One Example per sentence: words_a = the `tokens` field, tags = the `tags` field.

    fields: the number of fields every token line has (0: as many as the first token line);
    a tag field of -1 is the last one. An unlabelled file is not a CoNLL file (tags needed).
    """
    path = Path(path)
    examples: list[Example] = []
    words: list[str] = []
    labels: list[str] = []
    first = [0]  # the line of the sentence's first token
    like = ""  # where the number of fields comes from, when the file sets it

    def flush() -> None:
        if words:
            examples.append(Example(len(examples), tuple(words), tags=tuple(labels), line=first[0]))
            words.clear()
            labels.clear()

    for number, text in numbered_lines(path):
        parts = text.split()
        if not parts:
            flush()
            continue
        if parts[0] == DOCSTART:
            flush()  # a document boundary is also a sentence boundary
            continue
        if not fields:
            fields, like = len(parts), f" (as line {number}, the first token line)"
            if fields <= max(tokens, tags):
                raise malformed(
                    path,
                    number,
                    f"expected at least {max(tokens, tags) + 1} whitespace-"
                    f"separated fields (token in field {tokens}, tag in field {tags}), got "
                    f"{fields}",
                )
        if len(parts) != fields:
            raise malformed(
                path,
                number,
                f"expected {fields} whitespace-separated fields{like}, got {len(parts)}",
            )
        if not words:
            first[0] = number
        words.append(parts[tokens])
        labels.extend(answers.tags(path, number, [parts[tags]], column=tags % fields))
    flush()
    return examples
