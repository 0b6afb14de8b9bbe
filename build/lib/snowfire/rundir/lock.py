"""One holder of a run directory at a time.

    with hold_run(out):          # RUN/.lock, flock'ed: the OS drops it when the process dies
        ...                      # a second process (a retry while the first still runs) gets
                                 # RunBusyError at once instead of writing the same files

The holder's pid is written into the lock file, so the refusal names it. Temporary files a
killed holder left (`.tmp-*`, cache.atomic_write's) are removed once the directory is held.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .files import LOCK


class RunBusyError(RuntimeError):
    """Another live process holds the run directory."""


@contextmanager
def hold_run(out: str | Path) -> Iterator[Path]:
    """Hold run directory `out` (created if missing) for the time of the block."""
    path = Path(out)
    path.mkdir(parents=True, exist_ok=True)
    fd = os.open(path / LOCK, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            raise RunBusyError(
                f"{path} is held by another process (pid {holder}): one run writes a run "
                "directory at a time; wait for it, or use another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        for tmp in path.glob(".tmp-*"):  # a killed holder's half-written files
            if tmp.is_file():
                tmp.unlink()
        yield path
    finally:
        os.close(fd)  # drops the lock
