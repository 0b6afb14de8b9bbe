"""Files that survive a crash: written to a temporary name, fsynced, renamed into place, and
the directory fsynced so the rename itself is on disk (the store's writes, store.py)."""

from __future__ import annotations

import os
from pathlib import Path


def atomic_write(path: Path, text: str) -> None:
    """`text` at `path`, whole or not at all, even across a kill or a power cut."""
    tmp = path.with_name(f".tmp-{path.name}-{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
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
