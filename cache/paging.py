"""A read over the network in pages: their bound, how a selection is cut into them, and the
answer they fill in place, keeping what a cut page delivered whole.

Page bound. No answer a reader asks for holds more than `page_bytes` bytes (the features
body's header included), whatever the selection: a selection is cut into consecutive pages
by the bytes each example adds to a body (wire.example_bytes: its token count, which the
service's /lengths give, times the layers, dim and dtype the manifest gives, plus its index
and key). Default DEFAULT_PAGE_BYTES; `SNOWFIRE_PAGE_BYTES` sets it for every reader of a
process, `RemoteStore(url, page_bytes=...)` for one. An example larger than a page alone is
a page alone (it cannot be split).

Assembly. The answer is allocated once at its final size (the lengths say it) and each page's
body is read straight into its rows: pages cost no copy and no concatenation. The wire puts
the header and index tensors before the features (wire.py), so when a body is cut short, the
examples whose last row arrived are whole: they stay, and `BodyCut.whole` says how many, so
the client asks only for the rest (remote.py). A link that delivers one whole example per
connection therefore always finishes a read.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

import numpy as np

from .errors import StoreError
from .types import ExampleBatch
from .wire import Frame, array_bytes, frame_size, parse_frame

#: Bytes of one features answer, header included: large enough that a request's fixed cost
#: (a round trip, the service's plan) is a few percent of moving it on a fast link; small
#: enough that neither side holds more than a few of them at once.
DEFAULT_PAGE_BYTES = 64 << 20
#: The smallest page accepted: a header and an example or two of a tiny encoder.
MIN_PAGE_BYTES = 4096
PAGE_ENV = "SNOWFIRE_PAGE_BYTES"


def check_page_bytes(value: object, where: str = "page_bytes") -> int:
    """`value` as a page bound in bytes; ValueError naming `where` when it is not one."""
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_PAGE_BYTES:
        raise ValueError(
            f"{where}: expected an integer of at least {MIN_PAGE_BYTES}, got {value!r}"
        )
    return value


def page_bytes_from_env(environ: Mapping[str, str] | None = None) -> int:
    """SNOWFIRE_PAGE_BYTES when set (ValueError naming it when it is no page bound), else
    DEFAULT_PAGE_BYTES."""
    text = (os.environ if environ is None else environ).get(PAGE_ENV, "").strip()
    if not text:
        return DEFAULT_PAGE_BYTES
    value: object = text
    try:
        value = int(text)
    except ValueError:
        pass  # refused below, by its text
    return check_page_bytes(value, f"{PAGE_ENV}={text!r}")


def split_pages(sizes: np.ndarray, limit: int, most: int | None = None) -> list[tuple[int, int]]:
    """Consecutive [lo, hi) runs of examples of `sizes` bytes each whose sum stays within
    `limit`, and of at most `most` examples; an example over `limit` is a run alone."""
    cum = np.concatenate([[0], np.cumsum(np.asarray(sizes, dtype=np.int64))])
    n, runs, lo = len(cum) - 1, [], 0
    while lo < n:
        hi = int(np.searchsorted(cum, cum[lo] + limit, side="right")) - 1
        hi = max(hi, lo + 1)
        if most is not None:
            hi = min(hi, lo + most)
        runs.append((lo, hi))
        lo = hi
    return runs


class BodyCut(ConnectionError):
    """A features body that ended early; `whole` of the examples it answered, from the
    first, arrived whole and are kept."""

    def __init__(self, message: str, whole: int):
        super().__init__(message)
        self.whole = whole


class Assembly:
    """The answer of a paged read of examples of `lengths` tokens: `layers` of `dim` in the
    stored `dtype` (int8: with their scales), allocated whole and filled page by page."""

    def __init__(self, lengths: np.ndarray, layers: list[int], dim: int, dtype: str):
        n = len(lengths)
        self.ends = np.zeros(n + 1, dtype=np.int64)  # (n + 1,) each example's rows
        np.cumsum(lengths, out=self.ends[1:])
        tokens = int(self.ends[-1])
        self.layers = list(layers)
        self.features = np.empty((tokens, len(layers), dim), dtype=dtype)  # (N, Lsel, D)
        self.word_ids = np.empty(tokens, dtype=np.int32)  # (N,)
        self.type_ids = np.empty(tokens, dtype=np.int8)  # (N,)
        self.pair_starts = np.empty(n, dtype=np.int64)  # (n,)
        self.scales = (
            np.empty((tokens, len(layers)), dtype=np.float32) if dtype == "int8" else None
        )  # (N, Lsel) int8 sets only
        self.keys: list[str] = [""] * n

    def batch(self) -> ExampleBatch:
        return ExampleBatch(
            features=self.features,
            offsets=self.ends.copy(),
            word_ids=self.word_ids,
            type_ids=self.type_ids,
            pair_starts=self.pair_starts,
            layers=list(self.layers),
            keys=self.keys,
            scales=self.scales,
        )

    def receive(
        self, read_into: Callable[[memoryview], int], lo: int, hi: int, length: int | None
    ) -> None:
        """Read the body answering examples lo:hi (`length` bytes when the answer says so)
        into their places, through `read_into(view) -> bytes read` (0: the connection ended;
        an OSError: it broke). StoreError when the body is not the answer to lo:hi; BodyCut
        when it ends early, naming how many of the examples, from lo, are whole."""
        body = _Body(read_into, length)
        frame: Frame | None = None
        offsets = np.empty(hi - lo + 1, dtype=np.int64)  # (n + 1,) the body's own
        try:
            head = body.read(8)
            head += body.read(frame_size(head) - 8)
            frame = parse_frame(head)
            self._check(frame, lo, hi, length)
            body.total = frame.size + frame.data_bytes
            for name in frame.tensors:
                target = offsets if name == "offsets" else self._target(name, lo, hi)
                body.into(array_bytes(target))
                if name == "offsets":
                    self._check_offsets(offsets, lo, hi)
            if body.read_into(memoryview(bytearray(1))):  # its end read (chunked: the last chunk)
                raise StoreError(
                    f"features body for examples {lo}..{hi - 1}: longer than its header says"
                )
        except OSError as err:
            whole = 0
            if frame is not None and body.received >= frame.size:
                whole = min(frame.whole_examples(body.received - frame.size, offsets), hi - lo)
                self.keys[lo : lo + whole] = frame.keys[:whole]
            raise BodyCut(f"{err}; {whole} of its {hi - lo} examples whole, kept", whole) from err
        self.keys[lo:hi] = frame.keys

    def _target(self, name: str, lo: int, hi: int) -> np.ndarray:
        """Where tensor `name` of the body answering lo:hi goes."""
        t0, t1 = int(self.ends[lo]), int(self.ends[hi])
        if name == "pair_starts":
            return self.pair_starts[lo:hi]
        return getattr(self, name)[t0:t1]

    def _check(self, frame: Frame, lo: int, hi: int, length: int | None) -> None:
        """StoreError unless `frame` heads the answer to examples lo:hi, as asked."""
        where = f"features body for examples {lo}..{hi - 1}"
        if length is not None and frame.size + frame.data_bytes != length:
            raise StoreError(
                f"{where}: its header says {frame.size + frame.data_bytes} bytes, its "
                f"Content-Length {length}"
            )
        if not frame.contiguous:
            raise StoreError(f"{where}: its tensors do not lie back to back")
        if frame.layers != self.layers or len(frame.keys) != hi - lo:
            raise StoreError(
                f"{where}: layers {frame.layers} and {len(frame.keys)} keys, expected layers "
                f"{self.layers} and {hi - lo} keys"
            )
        expected = {"offsets": np.empty(hi - lo + 1, dtype=np.int64)}
        for name in ("features", "word_ids", "type_ids", "pair_starts", "scales"):
            if name != "scales" or self.scales is not None:
                expected[name] = self._target(name, lo, hi)
        if set(frame.tensors) != set(expected):
            raise StoreError(
                f"{where}: tensors {sorted(frame.tensors)}, expected {sorted(expected)}"
            )
        for name, want in expected.items():
            got = frame.tensors[name]
            if got.dtype != want.dtype or got.shape != want.shape:
                raise StoreError(
                    f"{where}: tensor {name!r} of {got.dtype.name} {list(got.shape)}, expected "
                    f"{want.dtype.name} {list(want.shape)} (the lengths the service gave)"
                )

    def _check_offsets(self, offsets: np.ndarray, lo: int, hi: int) -> None:
        want = self.ends[lo : hi + 1] - self.ends[lo]
        if not np.array_equal(offsets, want):
            raise StoreError(
                f"features body for examples {lo}..{hi - 1}: its offsets differ from the "
                "lengths the service gave (/lengths)"
            )


class _Body:
    """A body of `total` bytes (when known) read through `read_into`, counting what came."""

    def __init__(self, read_into: Callable[[memoryview], int], total: int | None):
        self.read_into, self.total = read_into, total
        self.received = 0

    def read(self, n: int) -> bytes:
        buf = bytearray(n)
        self.into(memoryview(buf))
        return bytes(buf)

    def into(self, view: memoryview) -> None:
        """Fill `view` with the next bytes of the body."""
        got = 0
        while got < len(view):
            n = self.read_into(view[got:])
            if not n:
                of = "" if self.total is None else f" of {self.total}"
                raise ConnectionError(
                    f"the service sent {self.received}{of} body bytes, then closed"
                )
            got += n
            self.received += n
