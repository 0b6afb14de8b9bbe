"""Files that survive a crash: written to a temporary name, fsynced, renamed into place, and
the directory fsynced so the rename itself is on disk. The one implementation of it: the
store's writes (store.py) and every run directory's files (the `rundir` package) use it."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

#: What `atomic_write` writes: text (UTF-8), bytes, or a function writing into the open file.
Data = str | bytes | Callable[[BinaryIO], object]


def atomic_write(path: str | os.PathLike, data: Data) -> None:
    """`data` at `path`, whole or not at all, even across a kill or a power cut.

    `data` is text (written as UTF-8), bytes, or a function that writes into the temporary
    file opened for binary reading and writing (`lambda f: torch.save(obj, f)`). When it
    raises, the temporary file is removed and `path` keeps what it held before.
    """
    path = Path(path)
    tmp = path.with_name(f".tmp-{path.name}-{os.getpid()}")
    try:
        with open(tmp, "w+b") as f:
            if callable(data):
                data(f)
            else:
                f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def fsync_tree(root: Path) -> None:
    """fsync every file under `root` (a segment before it is renamed into place)."""
    for dirpath, _, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def fsync_dir(path: Path) -> None:
    """fsync a directory, so the names created or renamed in it are on disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
