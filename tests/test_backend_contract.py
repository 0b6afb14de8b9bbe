"""One contract every storage `cache.Backend` passes: the local directory and object storage
(moto's S3 server on loopback) give the same bytes, ranges, listings and errors, write whole
objects and whole trees or nothing, and move a tree so that no reader sees it half there.

A new backend is one entry in `BACKENDS`: how to make an empty one, and how to make one over
the same objects whose writes fail at its transport (`broken`). Ranges are checked against
Python's own slicing of the bytes put.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snowfire.cache import (
    Backend,
    ByteRangeError,
    DirectoryBackend,
    ObjectBackend,
    ObjectNotFoundError,
    RetryPolicy,
    StoreError,
)
from tests.helpers.proxy import FaultProxy, Faults

COMMIT = "checksums.json"
#: Few quick tries: a write through a proxy that drops every request fails within a second.
TWO_TRIES = RetryPolicy(attempts=2, backoff=0.01, backoff_max=0.02, deadline=5)


@dataclass
class Kind:
    """How to make a backend of one kind, and one over its objects whose writes fail."""

    make: Callable[[pytest.FixtureRequest], Backend]
    broken: Callable[[Backend, pytest.MonkeyPatch], Iterator[Backend]]
    failure: str  # what the failed write's error says (a regex)


def _directory(request) -> Backend:
    return DirectoryBackend(request.getfixturevalue("tmp_path") / "store")


@contextmanager
def _disk_fails(backend: Backend, monkeypatch) -> Iterator[Backend]:
    """Every fsync fails: the bytes reach the temporary file, the rename never happens."""

    def fsync(fd):
        raise OSError(28, "No space left on device (injected)")

    with monkeypatch.context() as m:
        m.setattr(os, "fsync", fsync)
        yield backend


def _objects(request) -> Backend:
    return ObjectBackend(request.getfixturevalue("local_s3")())


@contextmanager
def _requests_lost(backend: Backend, monkeypatch) -> Iterator[Backend]:
    """The same bucket through a proxy that reads every request whole and resets the
    connection without an answer (the server never sees it)."""
    with FaultProxy(os.environ["AWS_ENDPOINT_URL"], Faults(drop_first=99)) as proxy:
        with monkeypatch.context() as m:
            m.setenv("AWS_ENDPOINT_URL", proxy.url)
            yield ObjectBackend(backend.location, retry=TWO_TRIES)


BACKENDS = {
    "directory": Kind(_directory, _disk_fails, r"No space left on device \(injected\)"),
    "objects": Kind(_objects, _requests_lost, r"writing \S+ failed \("),
}


@pytest.fixture(params=list(BACKENDS))
def kind(request) -> Kind:
    return BACKENDS[request.param]


@pytest.fixture
def backend(kind, request) -> Backend:
    made = kind.make(request)
    assert isinstance(made, Backend)
    return made


def _bytes(parts) -> list[bytes]:
    return [bytes(p) for p in parts]


# ---------------------------------------------------------------- whole objects
def test_round_trip_and_overwrite(backend):
    data = bytes(range(256)) * 5
    backend.put("a/b/c.bin", data)
    backend.put("empty", b"")
    assert backend.get("a/b/c.bin") == data
    assert backend.get("empty") == b""
    assert backend.exists("a/b/c.bin") and backend.exists("empty")
    backend.put("a/b/c.bin", b"new")
    assert backend.get("a/b/c.bin") == b"new"


def test_a_missing_object_is_named(backend):
    with pytest.raises(ObjectNotFoundError, match=r"no object 'a/missing' in ") as got:
        backend.get("a/missing")
    assert backend.location in str(got.value)
    assert isinstance(got.value, StoreError) and isinstance(got.value, FileNotFoundError)
    assert not backend.exists("a/missing")
    backend.put("a/b", b"x")
    assert not backend.exists("a")  # a prefix is not an object
    with pytest.raises(ObjectNotFoundError, match="'a'"):
        backend.get("a")


@pytest.mark.parametrize(
    "key", ["", "a//b", "../x", "a/../b", ".hidden", "a/.tmp-x", "/abs", "a/", "a\\b", "a\0b"]
)
def test_a_key_no_object_can_have(backend, key):
    for call in (backend.get, backend.exists, backend.delete):
        with pytest.raises(ValueError, match=r"key .*: expected '/'-separated names"):
            call(key)
    with pytest.raises(ValueError, match=r"key .*: expected '/'-separated names"):
        backend.put(key, b"x")


def test_root_says_where_the_objects_are_files(backend):
    backend.put("p/q.bin", b"bytes")
    if backend.root is None:
        assert backend.location.startswith("s3://")
    else:
        assert (backend.root / "p" / "q.bin").read_bytes() == b"bytes"  # what the store maps


# ---------------------------------------------------------------- ranges
def test_ranges_equal_slices_of_the_bytes(backend):
    """Many ranges of two objects in one call, overlapping, out of order, repeated, one
    ending at the object's end, empty ones anywhere up to the end: as Python slices them."""
    rng = random.Random(0)
    blobs = {"x/one": rng.randbytes(5000), "x/two": rng.randbytes(37)}
    for key, data in blobs.items():
        backend.put(key, data)
    asked = {}
    for key, data in blobs.items():
        n = len(data)
        ranges = [(0, n), (n - 1, 1), (n, 0), (0, 0), (3, 0), (2, 5), (2, 5)]
        for _ in range(40):
            start = rng.randrange(0, n + 1)
            ranges.append((start, rng.randrange(0, n - start + 1)))
        asked[key] = ranges
    got = backend.get_ranges(asked)
    assert set(got) == set(blobs)
    for key, ranges in asked.items():
        want = [blobs[key][s : s + n] for s, n in ranges]
        assert _bytes(got[key]) == want, key


@st.composite
def _object_and_ranges(draw):
    data = draw(st.binary(max_size=200))
    ranges = []
    for _ in range(draw(st.integers(1, 6))):
        start = draw(st.integers(0, len(data)))
        ranges.append((start, draw(st.integers(0, len(data) - start))))
    return data, ranges


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=_object_and_ranges())
def test_any_object_and_its_ranges_come_back(backend, case):
    """Property: whatever bytes are put (empty too), get gives them back and every range
    inside them gives its slice."""
    data, ranges = case
    backend.put("p/o", data)
    assert backend.get("p/o") == data
    got = backend.get_ranges({"p/o": ranges})["p/o"]
    assert _bytes(got) == [data[s : s + n] for s, n in ranges]
    assert backend.list("p") == {"p/o": len(data)}


@pytest.mark.parametrize(
    "rng, match",
    [
        ((8, 3), r"range \(start 8, length 3\) ends at byte 11, past the end of the object"),
        ((10, 1), r"range \(start 10, length 1\) ends at byte 11, past the end of the object"),
        ((50, 4), r"range \(start 50, length 4\) ends at byte 54, past the end of the object"),
        ((11, 0), r"range \(start 11, length 0\) ends at byte 11, past the end of the object"),
        ((-1, 2), r"range \(start -1, length 2\): expected both >= 0"),
        ((2, -1), r"range \(start 2, length -1\): expected both >= 0"),
        (("a", 1), r"a range is \(start, length\), got \('a', 1\)"),
    ],
)
def test_a_range_outside_the_object_is_refused(backend, rng, match):
    backend.put("o", b"0123456789")  # 10 bytes
    with pytest.raises(ByteRangeError, match=match) as got:
        backend.get_ranges({"o": [(0, 2), rng]})
    assert f"{backend.location}/o" in str(got.value)
    assert isinstance(got.value, StoreError) and isinstance(got.value, ValueError)


def test_ranges_of_a_missing_object(backend):
    backend.put("here", b"abc")
    with pytest.raises(ObjectNotFoundError, match="'gone'"):
        backend.get_ranges({"here": [(0, 1)], "gone": [(0, 1)]})
    with pytest.raises(ObjectNotFoundError, match="'gone'"):
        backend.get_ranges({"gone": [(0, 0)]})
    assert backend.get_ranges({}) == {}


# ---------------------------------------------------------------- listings
def test_listing_by_prefix(backend):
    objects = {
        "pools/a/zarr.json": b"1",
        "pools/a/segments/s1/x": b"22",
        "pools/a/segments/s1/y/z": b"333",
        "pools/ab/zarr.json": b"4444",  # "pools/a" is a prefix of its name, not of its key
        "top": b"55555",
    }
    for key, data in objects.items():
        backend.put(key, data)
    sizes = {key: len(data) for key, data in objects.items()}
    assert backend.list("") == sizes
    assert backend.list("pools/a") == {k: v for k, v in sizes.items() if k.startswith("pools/a/")}
    assert backend.list("pools/a/segments/s1/y") == {"pools/a/segments/s1/y/z": 3}
    assert backend.list("top") == {}  # an object is not a prefix
    assert backend.list("nothing/here") == {}
    assert backend.list_dir("") == ["pools", "top"]
    assert backend.list_dir("pools") == ["a", "ab"]
    assert backend.list_dir("pools/a") == ["segments", "zarr.json"]
    assert backend.list_dir("nothing") == []
    with pytest.raises(ValueError, match="key 'pools/'"):
        backend.list("pools/")


def test_what_the_backend_keeps_for_itself_is_never_listed(backend):
    """Its locks and the temporaries of a write in progress are not objects."""
    backend.put("p/k", b"old")
    with backend.lock("p"), backend.put_tree("p/t", COMMIT) as folder:
        folder.mkdir()
        (folder / COMMIT).write_bytes(b"{}")
        assert backend.list("") == {"p/k": 3}
        assert backend.list_dir("p") == ["k"]
    assert backend.list("") == {"p/k": 3, f"p/t/{COMMIT}": 2}


# ---------------------------------------------------------------- delete and rename
def test_delete(backend):
    backend.put("d/e/f", b"x")
    backend.put("d/g", b"y")
    backend.delete("d/e/f")
    assert not backend.exists("d/e/f")
    assert backend.list_dir("d") == ["g"]  # no empty prefix is left behind
    backend.delete("d/e/f")  # nothing there: nothing happens
    backend.delete("d")  # a prefix is not an object: nothing happens
    assert backend.get("d/g") == b"y"


def test_rename_an_object(backend):
    backend.put("a/x", b"1")
    backend.rename("a/x", "b/y")
    assert backend.get("b/y") == b"1" and not backend.exists("a/x")
    assert backend.list_dir("") == ["b"]
    with pytest.raises(ObjectNotFoundError, match="'a/x'"):
        backend.rename("a/x", "c")


def test_rename_a_tree_commit_first(backend, monkeypatch):
    """A tree moved is committed at its new place and not at its old; a backend that moves
    object by object takes the commit object away first (never a committed half-tree)."""
    files = {COMMIT: b"{}", "a/b": b"12", "c": b"345"}
    _write_tree(backend, "pools/p/segments/s", files)
    deleted = []
    real = backend.delete
    monkeypatch.setattr(backend, "delete", lambda key: (deleted.append(key), real(key)))
    backend.rename("pools/p/segments/s", "quarantine/s-1", COMMIT)
    assert not backend.has_tree("pools/p/segments/s", COMMIT)
    assert backend.has_tree("quarantine/s-1", COMMIT)
    assert backend.list("pools") == {}
    assert {k: backend.get(k) for k in backend.list("quarantine")} == {
        f"quarantine/s-1/{name}": data for name, data in files.items()
    }
    assert deleted == [] or deleted[0] == f"pools/p/segments/s/{COMMIT}", deleted


# ---------------------------------------------------------------- writes that fail
def test_a_failed_put_leaves_the_old_object(backend, kind, monkeypatch):
    backend.put("k", b"old bytes")
    with kind.broken(backend, monkeypatch) as failing:
        with pytest.raises(OSError, match=kind.failure):
            failing.put("k", b"new bytes, never seen")
    assert backend.get("k") == b"old bytes"
    assert backend.list("") == {"k": 9}  # no temporary left in sight


def test_a_failed_put_tree_leaves_no_tree(backend, kind, monkeypatch):
    with kind.broken(backend, monkeypatch) as failing:
        with pytest.raises(OSError, match=kind.failure):
            _write_tree(failing, "t", {COMMIT: b"{}", "x": b"1"})
    assert not backend.has_tree("t", COMMIT)
    assert not backend.exists(f"t/{COMMIT}")


# ---------------------------------------------------------------- trees
def _write_tree(backend: Backend, prefix: str, files: dict[str, bytes]) -> None:
    with backend.put_tree(prefix, COMMIT) as folder:
        for name, data in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)


def test_a_tree_appears_whole_commit_last(backend, monkeypatch):
    files = {COMMIT: b'{"x": 1}', "x/c/0": b"abc", "x/zarr.json": b"{}", "y": b"z" * 1000}
    puts = []
    real = backend.put
    monkeypatch.setattr(backend, "put", lambda key, data: (puts.append(key), real(key, data)))
    with backend.put_tree("pools/p/segments/s", COMMIT) as folder:
        assert isinstance(folder, Path) and not folder.exists()  # the caller makes it
        folder.mkdir()
        for name, data in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        assert not backend.has_tree("pools/p/segments/s", COMMIT)  # nothing yet
        assert backend.list("pools") == {}
    assert backend.has_tree("pools/p/segments/s", COMMIT)
    got = {k: backend.get(k) for k in backend.list("pools/p/segments/s")}
    assert got == {f"pools/p/segments/s/{name}": data for name, data in files.items()}
    assert backend.list_dir("pools/p/segments") == ["s"]
    assert puts == [] or puts[-1] == f"pools/p/segments/s/{COMMIT}", puts


def test_a_tree_whose_writer_raises_is_not_published(backend):
    with pytest.raises(RuntimeError, match="encoder failed"):
        with backend.put_tree("t", COMMIT) as folder:
            folder.mkdir()
            (folder / COMMIT).write_bytes(b"{}")
            raise RuntimeError("encoder failed")
    assert not backend.has_tree("t", COMMIT)
    assert backend.list("") == {} and backend.list_dir("") == []


def test_a_tree_without_its_commit_object_is_refused(backend):
    with pytest.raises(ValueError, match=rf"t: the tree written holds no {COMMIT}"):
        _write_tree(backend, "t", {"x": b"1"})
    assert not backend.has_tree("t", COMMIT)
    assert backend.list("") == {}


def test_a_killed_writers_leftovers_do_not_stop_the_next(backend):
    """A writer killed inside put_tree (its context never left) leaves nothing a reader
    sees; the next holder of the lock writes the same tree whole."""
    killed = backend.put_tree("pools/p/segments/s", COMMIT)
    folder = killed.__enter__()  # and never left: the process died here
    folder.mkdir()
    (folder / COMMIT).write_bytes(b"half")
    assert not backend.has_tree("pools/p/segments/s", COMMIT)
    assert backend.list("") == {}
    with backend.lock("pools/p"):
        if backend.root is not None:  # a directory: its temporaries are gone
            assert not list(backend.root.rglob(".tmp-*"))
        _write_tree(backend, "pools/p/segments/s", {COMMIT: b"whole", "x": b"1"})
    assert backend.get(f"pools/p/segments/s/{COMMIT}") == b"whole"
    del killed
