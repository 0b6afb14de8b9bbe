"""A job's log file as the API shows it: its last lines, and the progress it reports."""

from __future__ import annotations

import re
from pathlib import Path

#: Bytes read from the end of a log: enough for a tail, bounded however long the job ran.
_TAIL_BYTES = 64 * 1024
#: A tqdm bar (" 42%|####   | 21/50 ...").
_BAR = re.compile(r"(\d{1,3})%\|")


def read_tail(path: Path) -> str:
    """The end of the log (empty when it does not exist yet)."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - _TAIL_BYTES))
            return fh.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def tail_lines(text: str, n: int) -> list[str]:
    """The last `n` non-empty lines; a progress bar's carriage-return updates count as lines
    and only the last update of each is kept."""
    lines = [line.rsplit("\r", 1)[-1].rstrip() for line in re.split(r"\n", text)]
    lines = [line for line in lines if line.strip()]
    return lines[-n:] if n > 0 else []


def progress_of(text: str) -> float | None:
    """The fraction the latest progress bar in the log shows (0..1), None when there is none."""
    hits = _BAR.findall(text)
    return min(int(hits[-1]), 100) / 100 if hits else None
