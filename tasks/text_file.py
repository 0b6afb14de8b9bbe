"""Reader for raw input text (`snowfire extract --input FILE`): plain lines or JSON lines."""

from __future__ import annotations

import logging
from pathlib import Path

from .example import Example
from .lines import json_line, malformed, numbered_lines, words
from .text_rule import dotted, value_fault

log = logging.getLogger(__name__)

JSONL_SUFFIXES = (".jsonl", ".ndjson")


def _is_jsonl(path: Path) -> bool:
    """A .jsonl/.ndjson name, or every non-empty line opening with "{" (after blanks)."""
    if path.suffix.lower() in JSONL_SUFFIXES:
        return True
    seen = False
    for _, text in numbered_lines(path):
        stripped = text.lstrip()
        if stripped and not stripped.startswith("{"):
            return False
        seen = seen or bool(stripped)
    return seen


def _label(path: Path, line: int, value: object) -> str | float | None:
    """JSON strings stay class names, integers become class names ("1"), floats scores."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        raise malformed(path, line, f"expected label to be a string or a number, got {value!r}")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return value
    raise malformed(
        path, line, f"expected label to be a string or a number, got {type(value).__name__}"
    )


def _text_field(path: Path, line: int, record: dict, key: str) -> tuple[str, ...]:
    value = record[key]
    if not isinstance(value, str):
        raise malformed(path, line, f"expected {key!r} to be a string, got {type(value).__name__}")
    return words(path, line, value, f"{key!r}")


def _from_record(path: Path, line: int, record: object, index: int) -> Example:
    if not isinstance(record, dict):
        raise malformed(path, line, f"expected a JSON object, got {type(record).__name__}")
    fault = value_fault(record)  # the text rule, and numbers JSON has (no NaN)
    if fault:
        raise malformed(path, line, f"field {dotted(fault[0])!r}: {fault[1]}")
    words_b = None
    if "tokens" in record:
        tokens = record["tokens"]
        if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
            raise malformed(path, line, "expected 'tokens' to be a list of strings")
        if not tokens or not all(t and not any(c.isspace() for c in t) for t in tokens):
            raise malformed(
                path,
                line,
                "expected 'tokens' to be non-empty, without empty "
                f"or whitespace-holding tokens, got {tokens!r}",
            )
        words_a = tuple(tokens)
    elif "text" in record:
        words_a = _text_field(path, line, record, "text")
    elif "text_a" in record and "text_b" in record:
        words_a = _text_field(path, line, record, "text_a")
        words_b = _text_field(path, line, record, "text_b")
    else:
        raise malformed(
            path,
            line,
            "expected a field 'text', 'text_a' and 'text_b', or "
            f"'tokens', got fields {sorted(record)}",
        )
    return Example(
        index=index, words_a=words_a, words_b=words_b, label=_label(path, line, record.get("label"))
    )


def read_text_file(path: Path | str) -> list[Example]:
    """Examples of a raw text file, in file order (`Example.index` = position).

    JSON lines (a .jsonl/.ndjson file, or one whose every non-empty line starts with "{"):
    one object per line with "text", or "text_a" + "text_b" (a pair), or "tokens" (a list of
    words, kept as given), and optionally "label". Otherwise one sentence per line, words =
    `str.split()`. Blank lines are skipped in both formats (and counted in the log). Every
    text keeps the text rule (tasks/text_rule.py): a NUL or an unpaired surrogate (a JSON
    "\\ud83d" escape) is refused naming the file, line, column or field, and character.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"input file {path} does not exist")
    jsonl = _is_jsonl(path)
    examples: list[Example] = []
    blank = 0
    for number, text in numbered_lines(path):
        if not text.strip():
            blank += 1
            continue
        if not jsonl:
            examples.append(Example(index=len(examples), words_a=tuple(text.split())))
            continue
        record = json_line(path, number, text)
        examples.append(_from_record(path, number, record, len(examples)))
    if not examples:
        raise ValueError(f"{path}: expected at least one non-empty line, got none")
    if blank:
        log.info("%s: skipped %d blank lines", path, blank)
    return examples
