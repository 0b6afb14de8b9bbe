"""A read located but not yet done: where each example's tokens are, and its small arrays.

`Store.plan_read` makes one from a selection (the index look-ups and checks of a read);
`batch()` reads it whole (what `Store.read` returns), `features(lo, hi)` reads the features
of examples lo:hi only. The service streams a large answer from one plan, a few megabytes of
features at a time, reading the next piece while it sends the last (api/features.py): the
body's size and header are known before any feature is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import quant
from .errors import InvalidSelectionError
from .types import STORED_DTYPES, ExampleBatch

if TYPE_CHECKING:
    from .segment import Segment

#: What a read may return: a float dtype, or "int8" (the stored values and their scales).
READ_DTYPES = STORED_DTYPES
_EMPTY_IDS = np.empty(0, np.int32)
_DTYPES = {name: np.dtype(name) for name in STORED_DTYPES}  # parsed once


@dataclass
class ReadPlan:
    """n examples of a pool: each one's (segment, start, end) token range, its rows in the
    answer (`ends`), the layers asked for, the stored dtype and the dtype to return."""

    store: Any  # the Store whose read_spans reads the bytes
    spans: list[tuple[Segment, int, int]]  # (segment, start, end) of each example
    rows: list[int]  # each example's row in its segment
    ends: list[int]  # (n + 1,) the examples' token offsets in the answer
    keys: list[str]
    layers: list[int] | None  # checked against the pool; None: all
    num_layers: int  # layers in the answer
    dim: int
    stored: str  # the pool's dtype
    want: str  # the answer's: stored, a float dtype, or "int8" (values and scales)

    @property
    def num_tokens(self) -> int:
        return self.ends[-1]

    @property
    def dtype(self) -> str:
        """The dtype of the answer's features."""
        return self.want

    def features(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """(N', Lsel, D) features of examples lo:hi, each read straight into its rows."""
        hi = len(self.spans) if hi is None else hi
        ends, base = self.ends, self.ends[lo]
        out = np.empty((ends[hi] - base, self.num_layers, self.dim), dtype=_DTYPES[self.stored])
        if hi - lo == 1:
            seg, s, e = self.spans[lo]
            jobs = [(seg, s, e, out)]
        else:
            jobs = [
                (seg, s, e, out[ends[i] - base : ends[i + 1] - base])
                for i, (seg, s, e) in enumerate(self.spans[lo:hi], start=lo)
            ]
        self.store.read_spans(jobs, self.layers)
        if self.stored == "int8" and self.want != "int8":
            return quant.dequantize(out, self._scales(lo, hi), self.want)
        return out if self.want == self.stored else out.astype(self.want)

    def views(self) -> list[np.ndarray] | None:
        """The answer's features as views of the mapped shard files, in order ((S', L, D)
        each, no copy), or None unless every example is in a token-major local segment and
        the answer is all layers as stored (then `features` copies)."""
        if self.layers is not None or self.want != self.stored:
            return None
        out: list[np.ndarray] = []
        for seg, s, e in self.spans:
            got = seg.views(s, e)  # None: a copy is needed
            if got is None:
                return None
            out += got
        return out

    def small(self) -> dict[str, np.ndarray]:
        """offsets (n + 1,), word_ids (N,), type_ids (N,), pair_starts (n,), and scales
        (N, Lsel) when the answer is int8 as stored."""
        spans = self.spans
        if len(spans) == 1:  # one example: copies of its slices, no assembling
            seg, s, e = spans[0]
            word_ids, type_ids = seg.word_ids[s:e].copy(), seg.type_ids[s:e].copy()
            starts = seg.pair_starts[self.rows[0] : self.rows[0] + 1].copy()
        else:
            word_ids = np.concatenate(
                [seg.word_ids[s:e] for seg, s, e in spans] or [_EMPTY_IDS], dtype=np.int32
            )
            type_ids = np.concatenate(
                [seg.type_ids[s:e] for seg, s, e in spans] or [_EMPTY_IDS], dtype=np.int8
            )
            starts = np.array(
                [seg.pair_starts[r] for (seg, _, _), r in zip(spans, self.rows, strict=True)],
                dtype=np.int64,
            )
        out = {
            "offsets": np.array(self.ends, dtype=np.int64),
            "word_ids": word_ids,
            "type_ids": type_ids,
            "pair_starts": starts,
        }
        if self.want == "int8":
            out["scales"] = self._scales(0, len(spans))
        return out

    def batch(self) -> ExampleBatch:
        """The whole answer (what `Store.read` returns)."""
        small = self.small()
        return ExampleBatch(
            features=self.features(),
            offsets=small["offsets"],
            word_ids=small["word_ids"],
            type_ids=small["type_ids"],
            pair_starts=small["pair_starts"],
            layers=list(self.layers) if self.layers is not None else list(range(self.num_layers)),
            keys=list(self.keys),
            scales=small.get("scales"),
        )

    def _scales(self, lo: int, hi: int) -> np.ndarray:
        """(N', Lsel) float32 scales of examples lo:hi of an int8 pool."""
        parts = []
        for seg, s, e in self.spans[lo:hi]:
            assert seg.scales is not None  # every segment of an int8 pool has its scales
            scales = seg.scales[s:e]  # (n, L)
            parts.append(scales if self.layers is None else scales[:, self.layers])
        return np.concatenate(parts or [np.empty((0, self.num_layers), np.float32)])


def check_index_type(index: Any) -> None:
    """An index is an int (Python's or numpy's), not a bool or a float, in every reader: a
    Python 1.0 is refused here, though the service's JSON boundary reads 1.0 as 1."""
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise InvalidSelectionError(f"index {index!r} is not an integer")


def check_layers(layers: Sequence[int] | None, num_layers: int) -> list[int] | None:
    if layers is None:
        return None
    out = list(layers)
    if out and all(type(x) is int and 0 <= x < num_layers for x in out):
        return out  # the common case, without the per-layer messages below
    out = []
    for layer in layers:
        if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)):
            raise InvalidSelectionError(f"layer {layer!r} is not an integer")
        if not 0 <= layer < num_layers:
            raise InvalidSelectionError(
                f"layer {layer} out of range: this feature set has layers 0..{num_layers - 1}"
            )
        out.append(int(layer))
    if not out:
        raise InvalidSelectionError("layers is empty: name at least one layer")
    return out


def read_dtype(dtype: str | None, stored: str) -> str:
    """The dtype a read gives: `dtype` checked against what the pool stores."""
    if dtype is None:
        return "float32" if stored == "int8" else stored
    if dtype not in READ_DTYPES:
        raise InvalidSelectionError(
            f"dtype {dtype!r}: a read gives one of {', '.join(READ_DTYPES)}"
        )
    if dtype == "int8" and stored != "int8":
        raise InvalidSelectionError(f"dtype 'int8': this feature set is stored as {stored}")
    return dtype
