"""Numbered lines of a data file, and the error every reader raises for a bad one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path


def malformed(path: Path | str, line: int | str, message: str) -> ValueError:
    """The error for a bad line: file, 1-based line number (or another place, e.g. "row 3"
    of a Parquet file), then what was expected vs found."""
    where = f"line {line}" if isinstance(line, int) else line
    return ValueError(f"{path} {where}: {message}")


def numbered_lines(path: Path | str) -> Iterator[tuple[int, str]]:
    """Yield `(line_number, text)` for every line, 1-based, line ending removed.

    Lines are split on "\\n" only (a stray "\\r" or U+2028 inside a sentence stays put, which
    universal-newline reading would not guarantee); a trailing "\\r" (CRLF files) is dropped and
    a UTF-8 byte-order mark at the start of the file is ignored. The file is streamed, so a
    large split never needs to fit in memory twice.
    """
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise malformed(path, number, f"expected UTF-8 text, got {err.reason}") from None
            yield number, text.rstrip("\n").removesuffix("\r")


def words(path: Path | str, line: int, text: str, what: str) -> tuple[str, ...]:
    """The whitespace words of one sentence field; an empty sentence is a malformed line."""
    found = tuple(text.split())
    if not found:
        raise malformed(path, line, f"expected a non-empty {what}, got {text!r}")
    return found
