"""The examples of a user task's file: the rows of its table (tasks/tables.py), each checked.

Words are `str.split()` of a text, as every reader of the project splits them (so a text has
the same content key whichever file it came from); a tagging row's tokens are a list (JSON
lines, Parquet, datasets) or a space-separated string (CSV/TSV), kept as given, one tag each.
"""

from __future__ import annotations

from pathlib import Path

from .answers import Answers
from .example import Example
from .lines import malformed, words
from .tables import Table

#: The column roles of each kind of task: (text roles, answer role).
ROLES = {
    (False, False): (("text",), "label"),
    (True, False): (("text_a", "text_b"), "label"),
    (False, True): (("tokens",), "tags"),
}


def roles(pair: bool, tagging: bool) -> tuple[tuple[str, ...], str]:
    """The text roles and the answer role of a task's columns."""
    return ROLES[(pair, tagging)]


def _column_error(table: Table, column: str, role: str) -> ValueError:
    return ValueError(
        f"{table.path}: expected a column {column!r} (the {role}), got columns {table.names}"
    )


def examples_from_table(
    table: Table, columns: dict, answers: Answers, *, pair: bool, labelled: bool
) -> list[Example]:
    """One Example per row. `columns`: role -> column name. labelled: the answer column must
    be there (train, dev); otherwise a file without it is read as unlabelled (a test split)."""
    tagging = answers.kind == "tagging"
    text_roles, answer_role = roles(pair, tagging)
    for role in text_roles:
        if columns[role] not in table.columns:
            raise _column_error(table, columns[role], role)
    answer = columns[answer_role]
    if answer not in table.columns and (labelled or tagging):
        raise _column_error(table, answer, answer_role)
    if not len(table):
        raise ValueError(f"{table.path}: expected at least one row, got none")
    path = table.path
    examples = []
    for i in range(len(table)):
        line = table.where(i)
        if tagging:
            tokens = _tokens(path, line, table.columns[columns["tokens"]][i], columns["tokens"])
            tags = _sequence(table.columns[answer][i])
            if tags is None:
                raise malformed(path, line, f"column {answer!r}: expected tags, got an empty field")
            if len(tags) != len(tokens):
                raise malformed(
                    path,
                    line,
                    f"column {answer!r}: expected one tag per token ({len(tokens)}), "
                    f"got {len(tags)}",
                )
            examples.append(
                Example(i, tokens, tags=answers.tags(path, line, tags, answer), line=line)
            )
            continue
        texts = [_words(path, line, table.columns[columns[r]][i], columns[r]) for r in text_roles]
        label = None
        if answer in table.columns:
            label = answers.label(path, line, table.columns[answer][i], answer)
        examples.append(Example(i, texts[0], texts[1] if pair else None, label, line=line))
    return examples


def _words(path: Path, line, value, column: str) -> tuple[str, ...]:
    if value is not None and not isinstance(value, str):
        raise malformed(
            path, line, f"column {column!r}: expected a text, got {type(value).__name__} {value!r}"
        )
    return words(path, line, value or "", f"text in column {column!r}")


def _sequence(value) -> list | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.split() or None
    return list(value)


def _tokens(path: Path, line, value, column: str) -> tuple[str, ...]:
    tokens = _sequence(value)
    if not tokens:
        raise malformed(path, line, f"column {column!r}: expected tokens, got {value!r}")
    for token in tokens:
        if not isinstance(token, str) or not token or any(c.isspace() for c in token):
            raise malformed(
                path,
                line,
                f"column {column!r}: expected tokens without whitespace, got {token!r}",
            )
    return tuple(tokens)
