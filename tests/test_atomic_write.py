"""snowfire.cache.atomic_write, the one crash-safe writer (the store's records, every run
directory's files): the new content whole or the old one, nothing half-written, no temporary
file left, and the file and then its directory fsynced (the rename itself on disk)."""

from __future__ import annotations

import os
import stat

import pytest

from snowfire.cache import atomic_write


class Crash(RuntimeError):
    pass


@pytest.mark.parametrize(
    ("data", "want"),
    [
        ("tëxt\n", "tëxt\n".encode()),
        (b"\x00\xffbytes", b"\x00\xffbytes"),
        (lambda f: f.write(b"from a writer"), b"from a writer"),
    ],
    ids=["text", "bytes", "writer"],
)
def test_writes_text_bytes_or_a_writer_and_leaves_no_temporary_file(tmp_path, data, want):
    path = tmp_path / "f"
    path.write_bytes(b"old")
    atomic_write(path, data)
    assert path.read_bytes() == want
    assert [p.name for p in tmp_path.iterdir()] == ["f"]


def test_a_crash_inside_the_writer_leaves_the_old_file_whole(tmp_path):
    path = tmp_path / "metrics.json"
    atomic_write(path, '{"dev": 1}')

    def half_then_crash(f):
        f.write(b'{"dev": 2, "te')  # half of the new file is on disk ...
        raise Crash("killed mid-write")  # ... when the writer dies before the rename

    with pytest.raises(Crash, match="killed mid-write"):
        atomic_write(path, half_then_crash)
    assert path.read_text() == '{"dev": 1}'
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]  # the temp file removed


def test_a_crash_before_the_rename_leaves_the_old_file_whole(tmp_path, monkeypatch):
    path = tmp_path / "config.json"
    atomic_write(path, "old")

    def no_rename(src, dst):
        raise Crash("killed before the rename")

    monkeypatch.setattr(os, "replace", no_rename)
    with pytest.raises(Crash, match="killed before the rename"):
        atomic_write(path, "new")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["config.json"]


def test_the_file_is_fsynced_before_the_rename_and_the_directory_after(tmp_path, monkeypatch):
    path = tmp_path / "metrics.json"
    path.write_text("old")
    synced = []  # (kind, what `path` held at that moment)
    real = os.fsync

    def recording(fd):
        kind = "dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"
        synced.append((kind, path.read_text()))
        real(fd)

    monkeypatch.setattr(os, "fsync", recording)
    atomic_write(path, "new")
    # the temporary file while `path` still holds the old text, then the directory once the
    # rename has put the new text there
    assert synced == [("file", "old"), ("dir", "new")]
