"""`DirectoryBackend`: a store's objects as the files of a local directory (backend.py).

A key is a file's path under the root. Every write is crash-safe by durable.py's rules: an
object is written to a temporary file, fsynced and renamed over the old one (`atomic_write`);
a tree (`put_tree`: a segment) is written into a temporary folder beside its place, every
file fsynced, the folder renamed into place and its parent fsynced, so a reader sees the
whole tree or none of it. A killed writer leaves only `.tmp-*` names, which listings leave
out and the next holder of `lock` removes.

Reads of a segment's features do not come through here: the store maps the shard files under
`root` itself (shards.py), which costs no copy beyond the one into the answer.
"""

from __future__ import annotations

import builtins
import fcntl
import os
import shutil
import stat
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from .backend import Range, check_key, check_ranges
from .durable import atomic_write, fsync_dir, fsync_tree
from .errors import ByteRangeError, ObjectNotFoundError

#: What a writer holding `lock(prefix)` holds open: PREFIX/.lock (flock).
LOCK = ".lock"
#: The names temporaries begin with (put_tree's folders, atomic_write's files).
TEMPORARY = ".tmp-"


class DirectoryBackend:
    """The objects under `root`, one file each."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.location = str(self.root)

    def __repr__(self) -> str:
        return f"DirectoryBackend({self.location!r})"

    def _path(self, key: str, prefix: bool = False) -> Path:
        check_key(key, prefix=prefix)
        return self.root / key if key else self.root

    def _missing(self, key: str) -> ObjectNotFoundError:
        return ObjectNotFoundError(f"no object {key!r} in {self.location}")

    # ---------------------------------------------------------------- reading
    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise self._missing(key) from None

    def get_ranges(self, requests: Mapping[str, Sequence[Range]]) -> dict[str, list]:
        """Each range by one pread of the open file."""
        out = {}
        for key, ranges in requests.items():
            where = f"{self.location}/{key}"
            try:
                fd = os.open(self._path(key), os.O_RDONLY)
            except (FileNotFoundError, NotADirectoryError):
                raise self._missing(key) from None
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise self._missing(key)
                got = []
                for start, length in check_ranges(where, ranges, st.st_size):
                    data = os.pread(fd, length, start) if length else b""
                    if len(data) != length:  # the file shrank since fstat: not ours to mend
                        raise ByteRangeError(f"{where}: {len(data)} bytes read of {length}")
                    got.append(data)
            finally:
                os.close(fd)
            out[key] = got
        return out

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def list(self, prefix: str) -> dict[str, int]:
        top = self._path(prefix, prefix=True)
        out = {}
        for dirpath, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            rel = os.path.relpath(dirpath, self.root).replace(os.sep, "/")
            for name in files:
                if not name.startswith("."):
                    key = name if rel == "." else f"{rel}/{name}"
                    out[key] = os.stat(os.path.join(dirpath, name)).st_size
        return dict(sorted(out.items()))

    def list_dir(self, prefix: str) -> builtins.list[str]:
        """The names in the folder `prefix`. A folder holding no object is named too (one
        emptied by other hands, or holding only a lock): object storage has no such prefix."""
        try:
            with os.scandir(self._path(prefix, prefix=True)) as entries:
                return sorted(e.name for e in entries if not e.name.startswith("."))
        except (FileNotFoundError, NotADirectoryError):
            return []

    # ---------------------------------------------------------------- writing
    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)

    def delete(self, key: str) -> None:
        path = self._path(key)
        try:
            path.unlink()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return  # no such object (a folder is a prefix, not an object)
        self._prune(path.parent)

    def rename(self, src: str, dst: str, commit: str | None = None) -> None:
        """One rename of the file or folder: atomic, so `commit` needs no order."""
        source, target = self._path(src), self._path(dst)
        if not source.exists():
            raise self._missing(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(source, target)
        fsync_dir(target.parent)
        if source.parent != target.parent:
            fsync_dir(source.parent)
            self._prune(source.parent)

    @contextmanager
    def put_tree(self, prefix: str, commit: str) -> Iterator[Path]:
        """PREFIX's parent/.tmp-NAME-PID, renamed to PREFIX once whole (see the module)."""
        final = self._path(prefix)
        tmp = final.with_name(f"{TEMPORARY}{final.name}-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.parent.mkdir(parents=True, exist_ok=True)
        try:
            yield tmp
            if not (tmp / commit).is_file():
                raise ValueError(f"{self.location}/{prefix}: the tree written holds no {commit}")
            fsync_tree(tmp)
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        fsync_dir(final.parent)

    def has_tree(self, prefix: str, commit: str) -> bool:
        """The folder is there: it appeared whole, by one rename."""
        return self._path(prefix).is_dir()

    @contextmanager
    def lock(self, prefix: str) -> Iterator[None]:
        """flock of PREFIX/.lock; then the temporary folders killed writers' put_tree left in
        PREFIX or one level under it (a segment's: pools/P/segments/.tmp-*) are removed."""
        top = self._path(prefix)
        top.mkdir(parents=True, exist_ok=True)
        with open(top / LOCK, "w") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            try:
                folders = [top] + [p for p in top.iterdir() if p.is_dir() and p.name[0] != "."]
                for folder in folders:
                    for tmp in folder.glob(f"{TEMPORARY}*"):
                        if tmp.is_dir():
                            shutil.rmtree(tmp, ignore_errors=True)
                yield
            finally:
                fcntl.flock(held, fcntl.LOCK_UN)

    def _prune(self, folder: Path) -> None:
        """Remove `folder` and its parents while empty, up to the root (object storage has no
        empty prefixes: a listing here should not show one either)."""
        while folder != self.root and self.root in folder.parents:
            try:
                folder.rmdir()
            except OSError:  # not empty (or gone)
                return
            folder = folder.parent
