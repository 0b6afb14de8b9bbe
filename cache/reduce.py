"""Reductions of an ExampleBatch the service can apply before sending (so a client fetches
only what its head needs), and /v1/embed uses for its pooling. Pure numpy, float32 out.

    mix_layers     gamma * sum_l w_l h_l over the selected layers -> one layer (N, 1, D)
    pool_examples  one vector per example (n, L, D), or per pair side (n, 2, L, D): the mean or
                   max over its word pieces (special tokens left out), its first token, or its
                   [CLS] state (cls: the first token, which must be a special token)

Shapes: N tokens, n examples, L layers, D hidden size.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .errors import InvalidSelectionError
from .types import ExampleBatch

#: The pools, one list for the service's schemas, the Python dataset and the heads' input.
POOLS = ("mean", "max", "first", "cls")


def mix_layers(features: np.ndarray, weights: Sequence[float], gamma: float) -> np.ndarray:
    """(N, L, D) -> (N, 1, D) float32: `gamma * sum_l weights[l] * features[:, l]`.

    `weights` are the normalised scalar-mix weights (a run's scalar_mix.json "mix"), applied
    as given; one per layer of `features`.
    """
    w = np.asarray(weights, dtype=np.float32)
    if w.ndim != 1 or len(w) != features.shape[1]:
        raise InvalidSelectionError(
            f"mix.weights: {len(w)} weights for {features.shape[1]} layers (one per layer read)"
        )
    if not np.all(np.isfinite(w)) or not np.isfinite(gamma):
        raise InvalidSelectionError("mix: weights and gamma must be finite numbers")
    out = np.einsum("nld,l->nd", features.astype(np.float32), w) * np.float32(gamma)  # (N, D)
    return out[:, None, :]  # (N, 1, D)


def _reduce(rows: np.ndarray, how: str) -> np.ndarray:
    """(S, L, D) -> (L, D); zeros for no rows."""
    if len(rows) == 0:
        return np.zeros(rows.shape[1:], np.float32)
    if how == "mean":
        return rows.mean(axis=0, dtype=np.float32)
    if how == "max":
        return rows.max(axis=0).astype(np.float32)
    return rows[0].astype(np.float32)


def pool_examples(batch: ExampleBatch, how: str, sides: bool = False) -> np.ndarray:
    """(n, L, D) float32, or (n, 2, L, D) with `sides` (text a, text b of each pair).

    mean/max run over the word pieces (word_id >= 0; all tokens if an example has none);
    first takes the first token ([CLS] for BERT; with `sides`, each side's first word piece);
    cls the [CLS] state: the first token, refused unless it is a special token (word id -1;
    ELMo stores none), and with `sides` the first token of each side's own sequence, which only
    separately encoded pairs have (`[CLS] a [SEP] [CLS] b [SEP]`).
    """
    if how not in POOLS:
        raise InvalidSelectionError(f"pool {how!r}: expected one of {', '.join(POOLS)}")
    n, (_, n_layers, dim) = len(batch), batch.features.shape
    out = np.zeros((n, 2, n_layers, dim) if sides else (n, n_layers, dim), np.float32)
    for i in range(n):
        s, e = int(batch.offsets[i]), int(batch.offsets[i + 1])
        rows, words = batch.features[s:e], batch.word_ids[s:e] >= 0  # (S, L, D), (S,)
        if how == "cls":
            out[i] = _cls(batch, i, rows, words, sides)
            continue
        if not sides:
            out[i] = _reduce(rows if how == "first" or not words.any() else rows[words], how)
            continue
        if int(batch.pair_starts[i]) < 0:
            raise InvalidSelectionError(
                f"pool_sides: example {i} ({batch.keys[i]}) is a single text, not a pair"
            )
        types = batch.type_ids[s:e]
        for side in (0, 1):
            out[i, side] = _reduce(rows[words & (types == side)], how)
    return out


def _cls(batch: ExampleBatch, i: int, rows: np.ndarray, words: np.ndarray, sides: bool):
    """(L, D), or (2, L, D) with `sides`: the [CLS] row(s) of example i."""
    starts = [0, int(batch.pair_starts[i])] if sides else [0]
    if sides and starts[1] < 0:
        raise InvalidSelectionError(
            f"pool_sides: example {i} ({batch.keys[i]}) is a single text, not a pair"
        )
    for at in starts:
        if at >= len(rows) or words[at]:
            where = "its first token" if at == 0 else f"text b's first token (row {at})"
            hint = (
                "joint pairs have one [CLS]: pool cls without pool_sides"
                if at
                else "the encoder stored no [CLS] state (ELMo adds none): use first"
            )
            raise InvalidSelectionError(
                f"pool cls: example {i} ({batch.keys[i]}): {where} is a word piece, not a "
                f"special token; {hint}"
            )
    return rows[starts].astype(np.float32) if sides else rows[0].astype(np.float32)


def reduce_batch(
    batch: ExampleBatch,
    *,
    pool: str = "none",
    sides: bool = False,
    mix: tuple[Sequence[float], float] | None = None,
) -> ExampleBatch:
    """`batch` mixed (one layer) and/or pooled, still an ExampleBatch: pooled, example i owns
    one row (two with `sides`: type_ids 0 and 1 tell text a from b; pair_starts 1), word_ids -1.
    With `mix`, `layers` still names the layers that were mixed; features has one."""
    features = batch.features
    if mix is not None:
        features = mix_layers(features, mix[0], mix[1])  # (N, 1, D)
    if pool == "none":
        if sides:
            raise InvalidSelectionError(f"pool_sides needs a pool ({', '.join(POOLS)})")
        if mix is None:
            return batch
        return ExampleBatch(
            features,
            batch.offsets,
            batch.word_ids,
            batch.type_ids,
            batch.pair_starts,
            list(batch.layers),
            list(batch.keys),
        )
    staged = ExampleBatch(
        features,
        batch.offsets,
        batch.word_ids,
        batch.type_ids,
        batch.pair_starts,
        list(batch.layers),
        list(batch.keys),
    )
    pooled = pool_examples(staged, pool, sides)  # (n, [2,] L, D)
    n, k = len(batch), 2 if sides else 1
    return ExampleBatch(
        features=pooled.reshape(n * k, *pooled.shape[-2:]),  # (n * k, L, D)
        offsets=np.arange(n + 1, dtype=np.int64) * k,
        word_ids=np.full(n * k, -1, np.int32),
        type_ids=np.tile(np.arange(k, dtype=np.int8), n),
        pair_starts=np.full(n, 1 if sides else -1, np.int64),
        layers=list(batch.layers),
        keys=list(batch.keys),
    )
