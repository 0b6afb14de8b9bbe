"""Files of a run directory that appear whole: each is written with `cache.atomic_write` (a
temporary file, fsync, rename, fsync of the directory), so a reader, a kill or a power cut
sees the old file or the new one, never half of one.

    write_json(RUN / METRICS, metrics)          # JSON, indented
    write_lines(RUN / LOG, history)             # JSON lines, the whole log each time
    save_torch(RUN / CHECKPOINT, state)         # torch.save
    atomic_write(RUN / WEIGHTS, data)           # text, bytes, or a function writing the file

`cache` is imported when a file is first written, so `import rundir` stays light.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def atomic_write(path: str | Path, data) -> None:
    """`data` (text, bytes, or a function given the open binary file) at `path`, whole or not
    at all: `cache.atomic_write`, the one implementation."""
    from snowfire.cache import atomic_write as write

    write(path, data)


def _plain(value: Any) -> Any:
    """What JSON cannot hold: a numpy or torch scalar as its number, a path as its string,
    anything else as str()."""
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        return value.item()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def write_json(path: str | Path, obj: Any) -> None:
    """`obj` as indented JSON at `path`, atomically."""
    atomic_write(path, json.dumps(obj, indent=2, default=_plain) + "\n")


def write_lines(path: str | Path, records: list[Any]) -> None:
    """`records` as JSON lines at `path`, atomically: the whole log is rewritten each time, so
    a resumed run never repeats a line and a kill never leaves half of one."""
    atomic_write(path, "".join(json.dumps(r, default=_plain) + "\n" for r in records))


def save_torch(path: str | Path, obj: Any) -> None:
    """torch.save(`obj`) at `path`, atomically (a checkpoint is whole or the previous one)."""
    import torch

    atomic_write(path, lambda f: torch.save(obj, f))
