"""Plain data types the store hands out (local or remote alike)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

#: The dtypes features are stored in: float16 (the default), float32, or int8 (a float32 scale
#: per token and layer, cache/quant.py). The one list: the store, its reads, the wire format
#: and the extractor's `--dtype` check against it.
STORED_DTYPES = ("float16", "float32", "int8")


@dataclass(frozen=True)
class FeatureSetInfo:
    """One feature set: an ordered list of examples extracted by one encoder.

    id: stable name, e.g. "minilm-sst2-dev-3f2a9c1b"
    encoder: the encoder identity (name, spec, revision, weights_sha256, ...)
    encoder_id: hash of `encoder` plus storage dtype (the example pool it reads from)
    task, split: where known (None for raw text input)
    manifest: everything else that made it (source file + sha256, versions, config)
    """

    id: str
    encoder: dict[str, Any]
    encoder_id: str
    task: str | None
    split: str | None
    num_examples: int
    num_layers: int
    dim: int
    dtype: str
    manifest: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any], manifest: dict[str, Any]) -> FeatureSetInfo:
        """From a manifest (local store) or a summary plus its manifest (the service)."""
        return cls(
            id=d["id"],
            encoder=d["encoder"],
            encoder_id=d["encoder_id"],
            task=d.get("task"),
            split=d.get("split"),
            num_examples=d["num_examples"],
            num_layers=d["num_layers"],
            dim=d["dim"],
            dtype=d["dtype"],
            manifest=manifest,
        )

    def bytes_per_token(self, num_layers: int | None = None) -> int:
        """Stored bytes of one token's features (all layers, or `num_layers` of them)."""
        return token_bytes(self.dtype, num_layers or self.num_layers, self.dim)

    def summary(self) -> dict[str, Any]:
        """The JSON the service lists for this set."""
        return {
            "id": self.id,
            "encoder": self.encoder,
            "encoder_id": self.encoder_id,
            "task": self.task,
            "split": self.split,
            "num_examples": self.num_examples,
            "num_layers": self.num_layers,
            "dim": self.dim,
            "dtype": self.dtype,
        }


def token_bytes(dtype: str, num_layers: int, dim: int) -> int:
    """Bytes one token's features take stored as `dtype` (int8: a float32 scale per layer)."""
    itemsize = np.dtype(dtype).itemsize  # dtype: one of STORED_DTYPES
    return num_layers * (dim * itemsize + (4 if dtype == "int8" else 0))


@dataclass
class ExampleBatch:
    """Features of n examples on one flat token axis (ragged, no padding).

    features:    (N, Lsel, D) float16/float32, N = total tokens of the n examples
    offsets:     (n + 1,) int64; example i owns rows offsets[i]:offsets[i+1]
    word_ids:    (N,) int32, word index within its segment, -1 for special tokens
    type_ids:    (N,) int8, 0 first text, 1 second text of a pair
    pair_starts: (n,) int64, token index (relative to the example) where text b starts, -1 if none
    layers:      the layer indices held in `features`, in order
    keys:        the n example keys
    scales:      (N, Lsel) float32 when `features` are int8 as stored (cache/quant.py): the
                 values are features * scales[..., None]; None for float features
    """

    features: np.ndarray
    offsets: np.ndarray
    word_ids: np.ndarray
    type_ids: np.ndarray
    pair_starts: np.ndarray
    layers: list[int]
    keys: list[str]
    scales: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @classmethod
    def concat(cls, parts: list[ExampleBatch]) -> ExampleBatch:
        """One batch of the examples of `parts`, in order (offsets shifted, nothing padded)."""
        shifts = np.cumsum([0] + [int(p.offsets[-1]) for p in parts[:-1]])
        offsets = [parts[0].offsets[:1]] + [
            p.offsets[1:] + s for p, s in zip(parts, shifts, strict=True)
        ]
        return cls(
            features=np.concatenate([p.features for p in parts], axis=0),  # (N, Lsel, D)
            offsets=np.concatenate(offsets).astype(np.int64),  # (n + 1,)
            word_ids=np.concatenate([p.word_ids for p in parts]),  # (N,)
            type_ids=np.concatenate([p.type_ids for p in parts]),  # (N,)
            pair_starts=np.concatenate([p.pair_starts for p in parts]),  # (n,)
            layers=list(parts[0].layers),
            keys=[k for p in parts for k in p.keys],
            scales=None
            if parts[0].scales is None
            else np.concatenate([p.scales for p in parts]),  # (N, Lsel)
        )

    def select(self, rows: list[int]) -> ExampleBatch:
        """The examples at `rows` (positions, repeats allowed), in that order, copied."""
        starts, ends = self.offsets[rows], self.offsets[[r + 1 for r in rows]]
        spans = [np.arange(s, e) for s, e in zip(starts, ends, strict=True)]
        tokens = np.concatenate(spans or [np.empty(0)]).astype(np.int64)
        return ExampleBatch(
            features=self.features[tokens],
            offsets=np.concatenate([[0], np.cumsum(ends - starts)]).astype(np.int64),
            word_ids=self.word_ids[tokens],
            type_ids=self.type_ids[tokens],
            pair_starts=self.pair_starts[rows],
            layers=list(self.layers),
            keys=[self.keys[r] for r in rows],
            scales=None if self.scales is None else self.scales[tokens],
        )

    def with_layers(self, layers: list[int] | None) -> ExampleBatch:
        """This batch with only `layers` (held ones, in that order), as a read of those layers
        gives it; None or the same layers: self."""
        if layers is None or list(layers) == list(self.layers):
            return self
        pos = [list(self.layers).index(x) for x in layers]
        scales = None if self.scales is None else self.scales[:, pos]
        return replace(self, features=self.features[:, pos], layers=list(layers), scales=scales)

    @property
    def nbytes(self) -> int:
        """Bytes its arrays hold."""
        arrays = (self.features, self.offsets, self.word_ids, self.type_ids, self.pair_starts)
        return sum(a.nbytes for a in arrays) + (0 if self.scales is None else self.scales.nbytes)

    def dequantized(self, dtype: str = "float32") -> ExampleBatch:
        """This batch with float features (int8 features times their scales); self if float."""
        if self.scales is None:
            return (
                self
                if self.features.dtype == dtype
                else replace(self, features=self.features.astype(dtype))
            )
        from .quant import dequantize

        return replace(self, features=dequantize(self.features, self.scales, dtype), scales=None)

    def example(self, i: int) -> np.ndarray:
        """(S_i, Lsel, D) features of example i."""
        return self.features[self.offsets[i] : self.offsets[i + 1]]
