"""What every run directory (❄️ head run, 🔥 fine-tuning run) shares: one holder at a time,
files that appear whole.

    with hold_run(out):          # RUN/.lock, flock'ed: the OS drops it when the process dies
        ...                      # a second process (a retry while the first still runs) gets
                                 # RunBusyError at once instead of writing the same files
    atomic_write_text(RUN / "metrics.json", text)   # temp file, fsync, rename: whole or absent
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK = ".lock"


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
        yield path
    finally:
        os.close(fd)  # drops the lock


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write `text` to `path` so that a reader (or a kill) sees the old file or the new one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
