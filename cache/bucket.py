"""`ObjectBackend`: a store's objects on S3-compatible object storage (`s3://bucket/prefix`),
through obstore (backend.py's protocol).

The objects carry the names a local store's files have, so a bucket prefix and a directory
hold the same bytes and zarr opens either. Credentials, region and endpoint come from the
usual environment variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
AWS_ENDPOINT_URL; AWS_ALLOW_HTTP=true for a plain-http endpoint such as a local MinIO).
Failures that may pass are retried by obstore under the readers' one `RetryPolicy` (retry.py);
a body cut short, or a request that never left (a pooled connection the server had reset),
both of which obstore may report without retrying, is asked for again here (`attempt`). What
fails for good is one `StoreUnreachableError` naming the URL, what was being done and S3's
own code.

Atomicity without rename (docs/scale.md): a PUT makes a whole object visible or nothing.
    a tree       (`put_tree`: a segment) its files are put first, concurrently, its commit
                 object (the segment's checksums.json) last: a tree without one is not
                 committed (`has_tree`) and the store does not read it; a writer killed
                 mid-tree leaves objects no reader looks at, and the re-run puts the same
                 bytes again. `rename` copies a tree, then deletes it, its commit object first
    a feature set  its .texts.jsonl, .keys and .json.copy first, its .json manifest last
                 (sidecars.py: it records their checksums and its own)
Segments are content-addressed and extraction is deterministic, so two writers of one segment
put identical bytes: no lock is needed, and `lock` takes none.

`get_ranges` makes one obstore call per object for all its ranges (obstore merges ranges less
than `COALESCE` apart into one request) and fetches the objects concurrently. When that call
is cut short (obstore itself resumes a cut body up to its max_retries, then reports it), the
ranges are read again the way obstore merged them, each merged span by a streamed GET from
its first byte not yet received: a cut span resumes from the last byte that came, never from
its start, and each try that brings bytes is progress (retry.py). Ranges are read from
segments, which are content-addressed and never rewritten, so the bytes of a resumed span are
those of the same object.
"""

from __future__ import annotations

import builtins
import functools
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from .backend import Range, check_key, check_ranges, past_end
from .errors import ByteRangeError, ObjectNotFoundError, StoreUnreachableError
from .retry import RetryPolicy, Tries

SCHEMES = ("s3://",)
#: Concurrent requests of one call: the objects of a ranged read, or the files of a tree.
CONCURRENCY = 16
#: Ranges of an object closer than this many bytes are fetched by one request: obstore's
#: default, which the Rust object_store crate tunes for S3 (a request costs far more than 1 MiB
#: of transfer). Measured on moto (benchmarks/object_store.py), 256 random examples: 0.73 s at
#: 1 MiB, 1.6 s at 256 KiB, 4.4 s at 64 KiB, 11.9 s with no merging.
COALESCE = 1 << 20
#: The least obstore gathers before handing bytes over while a cut span is resumed: any, so a
#: cut loses none that arrived (obstore holds back what it gathers when the body breaks).
RESUME_CHUNK = 1


@contextmanager
def reaching(url: str, what: str) -> Iterator[None]:
    """Turn an object-storage failure (other than a missing object) into a one-line
    StoreUnreachableError naming the store, what was being done and S3's own code."""
    try:
        yield
    except FileNotFoundError:
        raise
    except Exception as err:
        if not _from_obstore(err):
            raise
        raise StoreUnreachableError(
            f"{url}: {what} failed ({_why(err)}); check the bucket and prefix, AWS_ENDPOINT_URL, "
            "AWS_REGION and the credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)"
        ) from None


#: How obstore reports a body that ended early (a reset, fewer bytes than Content-Length):
#: object_store retries a request until the answer's head arrives; a body cut after that it
#: resumes itself at times (up to max_retries), and reports otherwise. So a body cut again
#: and again costs up to attempts x attempts requests, within about twice the deadline.
_BODY_CUT = re.compile(r"body error|decoding response body")
#: A request that could not be sent, reported on its first try (object_store names its
#: retries when it made any): hyper cancels a request whose pooled connection the server has
#: just reset, and object_store does not count that error among those it retries.
_NOT_SENT = re.compile(r"error sending request")
_RETRIED = re.compile(r"after \d+ retries")
#: S3's answer to a range that starts past the object's end.
_UNSATISFIABLE = re.compile(r"\b416\b|InvalidRange")


class _Cut(Exception):
    """An obstore call cut short (the answer's body, or the request before it left): asked
    for again."""


class _Unsatisfiable(Exception):
    """A range S3 refused (416): told apart from a failure before `reaching` sees it."""


def attempt(url: str, retry: RetryPolicy, what: str, call: Callable[[], Any]) -> Any:
    """`call()` (obstore calls on the store at `url`) inside `reaching`; when an answer's
    body was cut short, or the request was never sent, and obstore did not retry it, it is
    called again under `retry` (the calls here are reads, or PUTs, copies and deletes of
    whole objects: repeating them is safe)."""
    tries = Tries(retry, f"{url}: {what}", StoreUnreachableError)
    while True:
        try:
            return once(url, what, call)
        except _Cut as cut:
            tries.failed(str(cut))


def once(url: str, what: str, call: Callable[[], Any]) -> Any:
    """`call()` inside `reaching`; _Cut when it was cut short in a way asking again mends."""
    with reaching(url, what):
        try:
            return call()
        except Exception as err:
            if _from_obstore(err) and (what_cut := _cut(str(err))):
                raise _Cut(f"{what_cut} ({_why(err)})") from None
            raise


def _cut(text: str) -> str:
    """What was cut short in an obstore error's `text` that asking again may mend, or ''."""
    if _BODY_CUT.search(text):
        return "the body cut short"
    if _NOT_SENT.search(text) and not _RETRIED.search(text):
        return "the request not sent"
    return ""


def _refused(err: BaseException) -> bool:
    """Whether obstore failed for a range past the object's end: S3 refuses one that starts
    past it (416); in a merged request, obstore panics slicing out of the shorter answer a
    range it does not hold (obstore 0.12, pyo3's PanicException)."""
    if type(err).__name__ == "PanicException":
        return True
    return _from_obstore(err) and bool(_UNSATISFIABLE.search(str(err)))


def _from_obstore(err: BaseException) -> bool:
    return type(err).__module__.split(".")[0] == "obstore"


def _why(err: BaseException) -> str:
    """S3's own code and message when the error holds them, else its first line."""
    text = str(err)
    code = re.search(r"<Code>([^<]+)</Code>", text)
    message = re.search(r"<Message>([^<]+)</Message>", text)
    return f"{code[1]}: {message[1]}" if code and message else text.splitlines()[0][:300]


def merge_ranges(ranges: Sequence[Range], gap: int) -> list[tuple[int, int]]:
    """[start, end) spans covering `ranges` (start, length), ranges less than `gap` bytes
    apart in one span (object_store's merging), in order."""
    spans: list[list[int]] = []
    for start, length in sorted(ranges):
        if spans and start - spans[-1][1] < gap:
            spans[-1][1] = max(spans[-1][1], start + length)
        else:
            spans.append([start, start + length])
    return [(a, b) for a, b in spans]


def is_bucket(location: Any) -> bool:
    return str(location).startswith(SCHEMES)


def connect(url: str, retry: RetryPolicy | None = None):
    """An obstore client for `s3://bucket/prefix`, configured from the environment, retrying
    under `retry` (default: `RetryPolicy.from_env()`) with obstore's own retry loop, which
    tries again after 5xx answers, refused or dropped connections and timeouts."""
    try:
        from obstore.store import from_url
    except ImportError:
        raise RuntimeError(
            f"{url}: a store on object storage needs obstore: pip install -e '.[s3]'"
        ) from None
    policy = RetryPolicy.from_env() if retry is None else retry
    return from_url(url, retry_config=policy.obstore())


class ObjectBackend:
    """The objects under an S3 prefix. client: an obstore store (default: `connect(url)`)."""

    root = None  # not local files: the store reads segments by ranges

    def __init__(self, url: str, client=None, retry: RetryPolicy | None = None):
        if not is_bucket(url):
            raise ValueError(f"an object storage URL starts with {' or '.join(SCHEMES)}: {url!r}")
        self.location = url.rstrip("/")
        self.retry = RetryPolicy.from_env() if retry is None else retry
        self.client = client if client is not None else connect(self.location, self.retry)
        self._threads = ThreadPoolExecutor(CONCURRENCY, thread_name_prefix="snowfire-s3")

    def __repr__(self) -> str:
        return f"ObjectBackend({self.location!r})"

    def _call(self, what: str, call: Callable[[], Any]) -> Any:
        return attempt(self.location, self.retry, what, call)

    def _missing(self, key: str) -> ObjectNotFoundError:
        return ObjectNotFoundError(f"no object {key!r} in {self.location}")

    # ---------------------------------------------------------------- reading
    def get(self, key: str) -> bytes:
        import obstore

        check_key(key)
        try:
            got = self._call(f"reading {key}", lambda: obstore.get(self.client, key).bytes())
        except FileNotFoundError:
            raise self._missing(key) from None
        return bytes(got)

    def get_ranges(self, requests: Mapping[str, Sequence[Range]]) -> dict[str, list]:
        items = list(requests.items())
        if len(items) < 2:
            return dict(self._ranges(*item) for item in items)
        return dict(self._threads.map(lambda item: self._ranges(*item), items))

    def _ranges(self, key: str, ranges: Sequence[Range]) -> tuple[str, list]:
        """The ranges of one object in one obstore call; empty ones cost a HEAD, for their
        start is checked against the object's size (S3 has no empty range)."""
        import obstore

        where = f"{self.location}/{key}"
        check_key(key)
        asked = check_ranges(where, ranges)
        wanted = [(start, length) for start, length in asked if length]

        def call():
            try:
                return obstore.get_ranges(
                    self.client,
                    key,
                    starts=[s for s, _ in wanted],
                    lengths=[n for _, n in wanted],
                    coalesce=COALESCE,
                )
            except BaseException as err:  # a panic is a BaseException
                if _refused(err):
                    raise _Unsatisfiable(err) from None
                raise

        got: list = []
        if wanted:
            what = f"reading {len(wanted)} ranges of {key}"
            try:
                try:
                    got = once(self.location, what, call)
                except _Cut as cut:  # what came is resumed, not asked for again
                    tries = Tries(self.retry, f"{where}: {what}", StoreUnreachableError)
                    tries.failed(str(cut))
                    got = self._resume(key, wanted, tries)
            except FileNotFoundError:
                raise self._missing(key) from None
            except _Unsatisfiable as refused:
                check_ranges(where, wanted, self._size(key))  # ByteRangeError naming one
                raise refused.args[0] from None  # all inside: not a range's fault
            short = [(s, n, len(d)) for (s, n), d in zip(wanted, got, strict=True) if len(d) != n]
            if short:  # S3 ends a range at the object's end
                size = self._size(key)
                check_ranges(where, wanted, size)
                raise ByteRangeError(f"{where}: {short[0][2]} bytes of range {short[0][:2]}")
        if len(wanted) < len(asked):
            size = self._size(key)
            for start, length in asked:
                if not length and start > size:
                    raise ByteRangeError(past_end(where, start, length, size))
        parts = iter(got)
        return key, [memoryview(next(parts)) if n else b"" for _, n in asked]

    def _resume(self, key: str, wanted: list[Range], tries: Tries) -> list[memoryview]:
        """The bytes of `wanted` ranges of `key`, their spans merged as obstore merges them
        (COALESCE) and each read by streamed GETs, every one from the first byte not yet
        received; a try that brings bytes is progress."""
        import obstore

        where = f"{self.location}/{key}"
        spans = merge_ranges(wanted, COALESCE)
        bufs = [np.empty(end - start, dtype=np.uint8) for start, end in spans]
        for (start, end), buf in zip(spans, bufs, strict=True):
            got = 0
            while got < len(buf):
                before = got
                try:
                    with reaching(self.location, f"reading bytes {start + got}..{end} of {key}"):
                        try:
                            options = {"range": (start + got, end)}
                            answer = obstore.get(self.client, key, options=options)
                            for chunk in answer.stream(min_chunk_size=RESUME_CHUNK):
                                n = min(len(chunk), len(buf) - got)
                                buf[got : got + n] = np.frombuffer(chunk, np.uint8, n)
                                got += n
                        except Exception as err:
                            if _from_obstore(err) and (what_cut := _cut(str(err))):
                                why = f"{what_cut} after byte {start + got} ({_why(err)})"
                                raise _Cut(why) from None
                            raise
                except _Cut as cut:
                    if got > before:
                        tries.progressed()
                    tries.failed(str(cut))
                    continue
                if got < len(buf):  # S3 ends a range at the object's end
                    check_ranges(where, wanted, self._size(key))
                    raise ByteRangeError(f"{where}: {got} bytes of span {start}..{end}")
        out = []
        for start, length in wanted:
            k = next(i for i, (s, e) in enumerate(spans) if s <= start and start + length <= e)
            out.append(memoryview(bufs[k])[start - spans[k][0] : start - spans[k][0] + length])
        return out

    def _size(self, key: str) -> int:
        import obstore

        try:
            meta = self._call(f"looking up {key}", lambda: obstore.head(self.client, key))
        except FileNotFoundError:
            raise self._missing(key) from None
        return int(meta["size"])

    def exists(self, key: str) -> bool:
        check_key(key)
        try:
            self._size(key)
        except FileNotFoundError:
            return False
        return True

    def list(self, prefix: str) -> dict[str, int]:
        import obstore

        check_key(prefix, prefix=True)
        found = self._call(
            f"listing {prefix or 'the prefix'}",
            lambda: {
                o["path"]: int(o["size"])
                for page in obstore.list(self.client, prefix or None)
                for o in page
            },
        )
        return {k: v for k, v in sorted(found.items()) if not _hidden(k)}

    def list_dir(self, prefix: str) -> builtins.list[str]:
        import obstore

        check_key(prefix, prefix=True)
        listing = self._call(
            f"listing {prefix or 'the prefix'}",
            lambda: obstore.list_with_delimiter(self.client, prefix or None),
        )
        paths = [o["path"] for o in listing["objects"]] + listing["common_prefixes"]
        names = {p.rsplit("/", 1)[-1] for p in paths}
        return sorted(n for n in names if n and not n.startswith("."))

    # ---------------------------------------------------------------- writing
    def put(self, key: str, data: bytes) -> None:
        """One PUT: the whole object or nothing."""
        import obstore

        check_key(key)
        self._call(f"writing {key}", lambda: obstore.put(self.client, key, data))

    def delete(self, key: str) -> None:
        import obstore

        check_key(key)
        self._call(f"deleting {key}", lambda: obstore.delete(self.client, key))

    def rename(self, src: str, dst: str, commit: str | None = None) -> None:
        """Every object copied, then deleted, the commit object first: the tree is then no
        longer committed, never half there."""
        import obstore

        check_key(src)
        check_key(dst)
        names = list(self.list(src))
        if not names:
            self._size(src)  # ObjectNotFoundError when it is not an object either
            names = [src]
        for name in names:
            to = dst + name[len(src) :]
            copy = functools.partial(obstore.copy, self.client, name, to)
            self._call(f"copying {name} to {to}", copy)
        names.sort(key=lambda name: name != f"{src}/{commit}")
        for name in names:
            self.delete(name)

    @contextmanager
    def put_tree(self, prefix: str, commit: str) -> Iterator[Path]:
        """A temporary local folder; its files put concurrently, the commit file last."""
        check_key(prefix)
        with tempfile.TemporaryDirectory(prefix="snowfire-tree-") as tmp:
            local = Path(tmp) / prefix.rsplit("/", 1)[-1]
            yield local
            if not (local / commit).is_file():
                raise ValueError(f"{self.location}/{prefix}: the tree written holds no {commit}")
            names = sorted(p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file())
            names.remove(commit)
            list(
                self._threads.map(
                    lambda name: self.put(f"{prefix}/{name}", (local / name).read_bytes()), names
                )
            )
            self.put(f"{prefix}/{commit}", (local / commit).read_bytes())

    def has_tree(self, prefix: str, commit: str) -> bool:
        """Its commit object is there (the last put_tree puts)."""
        return self.exists(f"{prefix}/{commit}")

    @contextmanager
    def lock(self, prefix: str) -> Iterator[None]:
        """No lock: two writers of a tree put the same bytes (see the module's notes)."""
        check_key(prefix)
        yield


def _hidden(key: str) -> bool:
    """A name no key may have (a component beginning with '.'): not listed."""
    return any(part.startswith(".") for part in key.split("/"))
