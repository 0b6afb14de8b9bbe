"""From the store's ragged `ExampleBatch` to the padded tensors a head reads.

Dimension glossary (as everywhere in snowfire):
    B batch, L layers, T words, S subword pieces (tokens), D hidden size, K tags / classes.
    Sa, Sb: the pieces of text a and text b of a pair (special tokens dropped).

Padding is at the end of every row and every mask is a prefix of True values, so a head may
pack its sequences by `mask.sum(-1)`. Padded features are zeros.

Pairs are split at `pair_start`, the token where text b begins: tokens before it belong to
text a, tokens from it on to text b. This holds for joint encoding (`[CLS] a [SEP] b [SEP]`,
pair_start at b's first token) and for separate encoding (`[CLS] a [SEP] [CLS] b [SEP]`,
pair_start at the second `[CLS]`); special tokens (word id -1) are then dropped, so
`features_a`/`features_b` hold the pieces of the words of each text alone.

Word level: each word is represented by its first piece (Devlin et al. 2019, sec. 5.3);
`first_piece_index[b, t]` is the position in the full sequence of word t's first piece, so a
head may also run over all pieces and gather the first ones afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace

import numpy as np
import torch

from snowfire.cache import ExampleBatch
from snowfire.nn import IGNORE_INDEX
from snowfire.tasks import KINDS


@dataclass
class HeadBatch:
    """A padded batch of B examples; optional fields are None when the batch has no use for them.

    kind:              "classification" | "regression" | "tagging"
    features:          (B, S, L, D) float32, every token of the example, specials included
    mask:              (B, S) bool, True on real tokens
    type_ids:          (B, S) long, 0 text a, 1 text b (0 on padding)
    word_ids:          (B, S) long, word index within its text, -1 special token or padding
    features_a/_b:     (B, Sa, L, D) / (B, Sb, L, D) float32, the pieces of each text of a pair
    mask_a/_b:         (B, Sa) / (B, Sb) bool
    word_features:     (B, T, L, D) float32, the first piece of each word (of text a)
    word_mask:         (B, T) bool, True on real words
    first_piece_index: (B, T) long, position of word t's first piece in `features` (0 on pads)
    labels:            (B,) long classes | (B,) float scores | (B, T) long tags, -100 on pads;
                       None when the batch carries no targets
    keys, layers:      the store's example keys and the layer indices on the L axis
    """

    kind: str
    features: torch.Tensor
    mask: torch.Tensor
    type_ids: torch.Tensor
    word_ids: torch.Tensor
    features_a: torch.Tensor | None = None
    mask_a: torch.Tensor | None = None
    features_b: torch.Tensor | None = None
    mask_b: torch.Tensor | None = None
    word_features: torch.Tensor | None = None
    word_mask: torch.Tensor | None = None
    first_piece_index: torch.Tensor | None = None
    labels: torch.Tensor | None = None
    keys: list[str] = field(default_factory=list)
    layers: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return self.features.shape[0]

    @property
    def is_pair(self) -> bool:
        return self.features_a is not None

    @property
    def is_word_level(self) -> bool:
        return self.word_features is not None

    def to(self, device: torch.device | str) -> HeadBatch:
        """The same batch with every tensor on `device`."""
        moved = {
            f.name: getattr(self, f.name).to(device)
            for f in fields(self)
            if isinstance(getattr(self, f.name), torch.Tensor)
        }
        return replace(self, **moved)


def collate(
    eb: ExampleBatch,
    targets: Sequence | None,
    *,
    kind: str,
    word_level: bool = False,
) -> HeadBatch:
    """Pad a ragged `ExampleBatch` into a `HeadBatch`.

    targets: one per example, or None: class indices (classification), floats (regression),
        or a sequence of tag indices, one per word (tagging).
    kind: the task kind; "tagging" always builds the word-level fields.
    word_level: build `word_features`, `word_mask`, `first_piece_index` for other kinds too.
    Pair fields are built when the examples are pairs (`pair_starts >= 0`).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    n = len(eb)
    if n == 0:
        raise ValueError("collate: the ExampleBatch holds no examples")
    if eb.features.ndim != 3:
        raise ValueError(f"collate: expected features (N, L, D), got shape {eb.features.shape}")
    if targets is not None and len(targets) != n:
        raise ValueError(f"collate: {n} examples but {len(targets)} targets")
    word_level = word_level or kind == "tagging"
    starts = np.asarray(eb.pair_starts)
    pair = bool((starts >= 0).any())
    if pair and not (starts >= 0).all():
        raise ValueError("collate: the batch mixes pairs and single texts")
    if pair and word_level:
        raise ValueError("collate: word-level fields are built for single texts, got pairs")
    keys = list(eb.keys) if eb.keys else [str(i) for i in range(n)]

    spans = [(int(eb.offsets[i]), int(eb.offsets[i + 1])) for i in range(n)]
    features = _pad([eb.features[s:e] for s, e in spans])  # (B, S, L, D)
    mask = _pad_mask([e - s for s, e in spans])  # (B, S)
    type_ids = _pad_ids([eb.type_ids[s:e] for s, e in spans], 0)  # (B, S)
    word_ids = _pad_ids([eb.word_ids[s:e] for s, e in spans], -1)  # (B, S)
    batch = HeadBatch(kind, features, mask, type_ids, word_ids, keys=keys, layers=list(eb.layers))

    if pair:
        parts_a: list[np.ndarray] = []
        parts_b: list[np.ndarray] = []
        for i, (s, e) in enumerate(spans):
            is_word = np.asarray(eb.word_ids[s:e]) >= 0  # (S_i,) specials dropped
            in_b = np.arange(e - s) >= starts[i]  # (S_i,)
            for part, rows, text in (
                (parts_a, is_word & ~in_b, "a"),
                (parts_b, is_word & in_b, "b"),
            ):
                if not rows.any():
                    raise ValueError(f"collate: example {keys[i]!r} has no tokens of text {text}")
                part.append(eb.features[s:e][rows])
        batch.features_a = _pad(parts_a)  # (B, Sa, L, D)
        batch.mask_a = _pad_mask([len(p) for p in parts_a])  # (B, Sa)
        batch.features_b = _pad(parts_b)  # (B, Sb, L, D)
        batch.mask_b = _pad_mask([len(p) for p in parts_b])  # (B, Sb)

    firsts = []
    if word_level:
        for i, (s, e) in enumerate(spans):
            firsts.append(_first_pieces(np.asarray(eb.word_ids[s:e]), keys[i]))
        index = _pad_ids(firsts, 0)  # (B, T)
        batch.first_piece_index = index
        batch.word_mask = _pad_mask([len(f) for f in firsts])  # (B, T)
        gathered = torch.gather(
            features, 1, index[:, :, None, None].expand(-1, -1, *features.shape[2:])
        )  # (B, T, L, D)
        batch.word_features = gathered * batch.word_mask[:, :, None, None]  # (B, T, L, D)

    if targets is not None:
        batch.labels = _labels(targets, kind, keys, [len(f) for f in firsts])
    return batch


def _first_pieces(word_ids: np.ndarray, key: str) -> np.ndarray:
    """(T,) position of each word's first piece; every word must own at least one piece."""
    positions = np.nonzero(word_ids >= 0)[0]
    if len(positions) == 0:
        raise ValueError(f"collate: example {key!r} has no words")
    words, first = np.unique(word_ids[positions], return_index=True)
    if words[-1] != len(words) - 1:
        missing = sorted(set(range(int(words[-1]) + 1)) - set(words.tolist()))
        raise ValueError(f"collate: example {key!r}: words {missing[:5]} have no pieces")
    return positions[first]


def _labels(targets: Sequence, kind: str, keys: list[str], num_words: list[int]) -> torch.Tensor:
    if kind == "classification":
        return torch.as_tensor(np.asarray(targets, dtype=np.int64))  # (B,)
    if kind == "regression":
        return torch.as_tensor(np.asarray(targets, dtype=np.float32))  # (B,)
    for key, tags, t in zip(keys, targets, num_words, strict=True):
        if len(tags) != t:
            raise ValueError(f"collate: example {key!r} has {t} words but {len(tags)} tags")
    labels = torch.full((len(targets), max(num_words)), IGNORE_INDEX, dtype=torch.long)  # (B, T)
    for i, tags in enumerate(targets):
        labels[i, : len(tags)] = torch.as_tensor(np.asarray(tags, dtype=np.int64))
    return labels


def _pad(parts: list[np.ndarray]) -> torch.Tensor:
    """(B, S, L, D) float32 from B arrays of shape (S_i, L, D), zeros after each row."""
    lengths = torch.tensor([len(p) for p in parts])  # (B,)
    out = torch.zeros((len(parts), int(lengths.max()), *parts[0].shape[1:]))  # (B, S, L, D)
    flat = torch.from_numpy(np.concatenate(parts).astype(np.float32, copy=False))  # (N, L, D)
    rows = torch.repeat_interleave(torch.arange(len(parts)), lengths)  # (N,)
    cols = torch.arange(len(flat)) - torch.repeat_interleave(lengths.cumsum(0) - lengths, lengths)
    out[rows, cols] = flat  # one scatter instead of B copies
    return out


def _pad_ids(parts: list[np.ndarray], value: int) -> torch.Tensor:
    """(B, S) long from B integer arrays of shape (S_i,), `value` after each row."""
    out = torch.full((len(parts), max(len(p) for p in parts)), value, dtype=torch.long)
    for i, p in enumerate(parts):
        out[i, : len(p)] = torch.from_numpy(np.asarray(p, dtype=np.int64))
    return out


def _pad_mask(lengths: list[int]) -> torch.Tensor:
    """(B, S) bool, True on the first lengths[b] positions."""
    return torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
