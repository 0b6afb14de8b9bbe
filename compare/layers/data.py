"""The probes' data, read from the store once: every example's (or, for tagging, every word's)
vector at every layer, with its task target and its control target.

    v_{i,l} = (1/S_i) Σ_s h_{i,s,l}     example i: the mean over its S_i stored rows (every
                                         token the encoder produced, specials included: the
                                         `probe` head's pool "mean"), at each layer l
    v_{w,l} = (1/|w|) Σ_{s ∈ w} h_{s,l}  tagging: word w, the mean over its word pieces

Pooling is the only pass over the stored features: afterwards an epoch of every probe of every
layer reads (N, L, D) floats from memory, which is what makes the sweep cost about one probe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from snowfire.cache import FeatureSetInfo, Reader
from snowfire.heads import FeatureSource
from snowfire.tasks import task_targets

from .control import control_labels, distribution, text_type


@dataclass(frozen=True)
class Probed:
    """One role's data: x (N, L, D) float32 pooled vectors; y (N,) task targets (class or tag
    indices, int64; scores, float32); yc (N,) control targets (None: no control task);
    lengths: tagging, words per sentence (to regroup word predictions), else None."""

    x: torch.Tensor
    y: torch.Tensor
    yc: torch.Tensor | None
    lengths: list[int] | None

    def __len__(self) -> int:
        return self.x.shape[0]


def pooled(
    reader: Reader,
    info: FeatureSetInfo,
    indices: Sequence[int],
    words: Sequence[int] | None = None,
    max_bytes: int = 4 * 10**9,
) -> torch.Tensor:
    """(N, L, D) float32: the mean of each example's rows in `indices` order; with `words`
    (each example's word count) (W, L, D): each word's mean over its pieces, in order."""
    source = FeatureSource(reader, info, None, max_bytes, subset=list(indices))
    where = {int(i): p for p, i in enumerate(indices)}  # set index -> position
    if words is not None:
        starts = np.concatenate([[0], np.cumsum(words)]).astype(np.int64)  # (N + 1,)
        total = int(starts[-1])
    else:
        total = len(indices)
    sums = torch.zeros(total, info.num_layers, info.dim, dtype=torch.float32)  # (N|W, L, D)
    counts = torch.zeros(total, dtype=torch.float32)  # (N|W,)
    for idx, eb in source.iterate(512):
        feats = torch.from_numpy(np.asarray(eb.features, dtype=np.float32))  # (T, L, D)
        lengths = np.diff(eb.offsets)  # (n,)
        pos = np.array([where[i] for i in idx], dtype=np.int64)  # (n,)
        if words is None:
            rows = np.repeat(pos, lengths)  # (T,) each row's example
            keep = np.ones(len(rows), dtype=bool)
        else:
            word_ids = np.asarray(eb.word_ids, dtype=np.int64)  # (T,) -1: a special token
            seen = [int(word_ids[a:b].max(initial=-1)) + 1 for a, b in _spans(eb.offsets)]
            for i, n, p in zip(idx, seen, pos, strict=True):
                if n != words[p]:
                    raise ValueError(
                        f"feature set {info.id}: example {i} has {n} stored words, its "
                        f"sentence {words[p]}: re-extract this split"
                    )
            rows = np.repeat(starts[pos], lengths) + word_ids  # (T,) each row's word
            keep = word_ids >= 0
        rows_t = torch.from_numpy(rows[keep])
        sums.index_add_(0, rows_t, feats[torch.from_numpy(keep)])
        counts.index_add_(0, rows_t, torch.ones(len(rows_t)))
    if bool((counts == 0).any()):
        raise ValueError(f"feature set {info.id}: an example or word has no stored rows")
    return sums / counts[:, None, None]  # (N|W, L, D)


def _spans(offsets: np.ndarray):
    return zip(offsets[:-1], offsets[1:], strict=True)


def targets(spec, examples) -> tuple[torch.Tensor, list[int] | None]:
    """(y (N,) or (W,) for tagging, words per sentence or None): what the probes fit."""
    raw = task_targets(spec, examples)
    if raw is None:
        raise ValueError(f"{spec.name}: a split the sweep scores has no gold labels")
    if spec.kind == "tagging":
        lengths = [len(t) for t in raw]
        return torch.from_numpy(np.concatenate(raw).astype(np.int64)), lengths
    if spec.kind == "regression":
        return torch.from_numpy(np.asarray(raw, dtype=np.float32)), None
    return torch.from_numpy(np.asarray(raw, dtype=np.int64)), None


def types_of(spec, examples) -> list[str]:
    """The control task's types: each word (tagging) or each text."""
    if spec.kind == "tagging":
        return [w for e in examples for w in e.words_a]
    return [text_type(e.words_a, e.words_b) for e in examples]


def control_targets(spec, examples, train_y: torch.Tensor) -> torch.Tensor:
    """(N,) or (W,) control label indices drawn per type from train's label distribution."""
    shares = distribution(train_y.numpy(), len(spec.labels))
    return torch.from_numpy(control_labels(types_of(spec, examples), shares))
