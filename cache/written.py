"""What a segment holds before it is written: the arrays `segment.write_segment` puts in its
files, built from the encoder's parts, and the `ExampleBatch` a read of them would give.

The embed worker answers the request that asked for new texts from these arrays while the
segment is still being written (serving's fast path): the values are the stored ones, cast or
quantized exactly as the files hold them, so a head reads the same digits from either.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import quant
from .types import ExampleBatch


@dataclass(frozen=True)
class SegmentArrays:
    """A segment's arrays (N tokens, n examples, L layers, D dims; segment.py's layout)."""

    features: np.ndarray  # (N, L, D) in the segment's dtype
    scales: np.ndarray | None  # (N, L) float32 for int8, else None
    offsets: np.ndarray  # (n + 1,) int64
    word_ids: np.ndarray  # (N,) int32
    type_ids: np.ndarray  # (N,) int8
    pair_starts: np.ndarray  # (n,) int64

    def small(self) -> dict[str, np.ndarray]:
        """The small arrays by their file names (scales only for int8)."""
        out = {
            "offsets": self.offsets,
            "word_ids": self.word_ids,
            "type_ids": self.type_ids,
            "pair_starts": self.pair_starts,
        }
        return out if self.scales is None else {**out, "scales": self.scales}

    def batch(self, keys: list[str]) -> ExampleBatch:
        """Every example with every layer, as `Store.read_keys(pool, keys, None)` returns them
        once written: float features in the stored dtype, int8 dequantized to float32 (a
        read's default; elementwise, so selecting layers first or after gives the same)."""
        features = self.features
        if self.scales is not None:
            features = quant.dequantize(features, self.scales)
        return ExampleBatch(
            features=features,
            offsets=self.offsets,
            word_ids=self.word_ids,
            type_ids=self.type_ids,
            pair_starts=self.pair_starts,
            layers=list(range(self.features.shape[1])),
            keys=list(keys),
        )


def segment_arrays(keys: list[str], parts: list[tuple[np.ndarray, ...]], dtype: str):
    """The arrays of a segment of `keys`: parts[i] = (features (S_i, L, D), word_ids (S_i,),
    type_ids (S_i,), pair_start int), features cast to `dtype` (int8: quantized per token and
    layer, quant.py). ValueError on a count or shape mismatch; OverflowError when float16
    cannot hold the activations."""
    if len(keys) != len(parts) or not keys:
        raise ValueError(f"write_segment: {len(keys)} keys for {len(parts)} examples")
    lengths = np.array([p[0].shape[0] for p in parts], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)  # (n+1,)
    num_tokens = int(offsets[-1])
    _, num_layers, dim = parts[0][0].shape
    features = np.empty((num_tokens, num_layers, dim), dtype=dtype)  # (N, L, D)
    scales = np.empty((num_tokens, num_layers), np.float32) if dtype == "int8" else None
    limit = float(np.finfo(np.float16).max)
    for i, part in enumerate(p[0] for p in parts):
        if part.ndim != 3 or part.shape[1:] != (num_layers, dim):
            raise ValueError(
                f"write_segment: example {i} has features {part.shape}, "
                f"expected (S, {num_layers}, {dim}) like example 0"
            )
        if dtype == "float16" and part.size:  # max/min: no |x| temporary of the segment
            peak = max(float(part.max()), -float(part.min()))
            if not np.isfinite(peak) or peak > limit:
                raise OverflowError(
                    f"activations reach {peak:.4g}, beyond float16 range (65504): "
                    "re-run with --dtype float32"
                )
        if scales is not None:
            features[offsets[i] : offsets[i + 1]], scales[offsets[i] : offsets[i + 1]] = (
                quant.quantize(part)
            )
        else:
            features[offsets[i] : offsets[i + 1]] = part  # cast once, into the segment's buffer
    return SegmentArrays(
        features=features,
        scales=scales,
        offsets=offsets,
        word_ids=np.concatenate([p[1] for p in parts]).astype(np.int32),
        type_ids=np.concatenate([p[2] for p in parts]).astype(np.int8),
        pair_starts=np.array([p[3] for p in parts], dtype=np.int64),
    )
