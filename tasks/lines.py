"""Numbered lines of a data file, and the error every reader raises for a bad one."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from .text_rule import REFUSED, char_fault


def malformed(path: Path | str, line: int | str, message: str) -> ValueError:
    """The error for a bad line: file, 1-based line number (or another place, e.g. "row 3"
    of a Parquet file), then what was expected vs found."""
    where = f"line {line}" if isinstance(line, int) else line
    return ValueError(f"{path} {where}: {message}")


#: After a "\r" that no "\n" follows: where a line ends in a file of old Mac line ends.
_LONE_CR = re.compile(rb"(?<=\r)(?!\n)")


def numbered_lines(path: Path | str, cr_ends: bool = False) -> Iterator[tuple[int, str]]:
    """Yield `(line_number, text)` for every line, 1-based, line ending removed.

    Lines are split on "\\n" only (a stray "\\r" or U+2028 inside a sentence stays put, which
    universal-newline reading would not guarantee); a trailing "\\r" (CRLF files) is dropped and
    a UTF-8 byte-order mark at the start of the file is ignored. cr_ends: a lone "\\r" ends a
    line too, as pyarrow's CSV reader reads one (the delimited readers' line numbers are then
    its rows'). Every line keeps the text rule (tasks/text_rule.py): bytes that are not UTF-8
    (an encoded surrogate among them) or a NUL are refused naming the line and the column
    (1-based, in characters). The file is streamed, so a large split never needs to fit in
    memory twice.
    """
    number = 0
    with open(path, "rb") as fh:
        for chunk in fh:
            if number == 0 and chunk.startswith(b"\xef\xbb\xbf"):
                chunk = chunk[3:]
            parts = _LONE_CR.split(chunk) if cr_ends and b"\r" in chunk else [chunk]
            for raw in parts:
                if not raw:  # after a "\r" that ends the file
                    continue
                number += 1
                yield number, _decoded(path, number, raw).rstrip("\n").removesuffix("\r")


def _decoded(path: Path | str, number: int, raw: bytes) -> str:
    """One line's text, or the error naming its column: not UTF-8, or refused by the rule."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        column = len(raw[: err.start].decode("utf-8")) + 1
        raise malformed(
            path,
            number,
            f"column {column}: expected UTF-8 text, got byte 0x{raw[err.start]:02x} ({err.reason})",
        ) from None
    refused = REFUSED.search(text)
    if refused is not None:
        raise malformed(
            path, number, f"column {refused.start() + 1} is {char_fault(refused.group())}"
        )
    return text


def words(path: Path | str, line: int, text: str, what: str) -> tuple[str, ...]:
    """The whitespace words of one sentence field; an empty sentence is a malformed line."""
    found = tuple(text.split())
    if not found:
        raise malformed(path, line, f"expected a non-empty {what}, got {text!r}")
    return found


def json_line(path: Path | str, line: int, text: str):
    """The JSON value of one line, or the malformed-line error: invalid JSON (with its column),
    nesting too deep for the parser, an integer too long for Python to read."""
    import json

    expected = "expected a JSON object, got"
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        why = f"invalid JSON ({err.msg} at column {err.colno})"
    except RecursionError:
        why = "nesting too deep to read"
    except ValueError as err:  # e.g. an integer of more than 4300 digits
        why = f"a value it cannot read ({err})"
    raise malformed(path, line, f"{expected} {why}")


#: How deep a record of a JSON lines file may nest. Task data nests a level or two (a record, a
#: list of words); pyarrow's JSON reader takes time growing faster than the square of the depth
#: (one line of 2,000 nested lists: 3 s, of 4,000: 15 s; found by tests/test_fuzz_files.py).
MAX_JSON_DEPTH = 64


def check_json_depth(path: Path | str, limit: int = MAX_JSON_DEPTH) -> None:
    """The malformed-line error for the first line of a JSON lines file that nests deeper than
    `limit` (a record is level 1). Linear in the file: a line is parsed only when it holds more
    than `limit` brackets; a line that is not JSON is left to the reader, which names it."""
    import json

    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            if line.count(b"[") + line.count(b"{") <= limit:
                continue
            try:
                depth = _depth(json.loads(line))
            except RecursionError:
                depth = None
            except ValueError:
                continue
            if depth is None or depth > limit:
                found = "deeper than the parser reads" if depth is None else f"{depth} levels"
                raise malformed(path, number, f"a record nests {found}, the limit is {limit}")


def _depth(value) -> int:
    """How many lists and objects deep `value` nests (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in item)
    return deepest
