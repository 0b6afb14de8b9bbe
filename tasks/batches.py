"""The training batches of an epoch, one home for ❄️ heads and 🔥 fine-tuning: random, or
length-bucketed so that a batch holds examples of similar length (little padding) yet the
batches still come in a random order (AllenNLP's bucket iterator, transformers'
`group_by_length`)."""

from __future__ import annotations

import numpy as np


def example_length(example) -> int:
    """An example's length in words (both texts of a pair): what bucketing sorts by."""
    return len(example.words_a) + len(example.words_b or ())


def length_batches(
    lengths, batch_size: int, pool: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """Batches (arrays of positions in `lengths`) of one epoch; ceil(n / batch_size) of them,
    every position once. Draws `rng.permutation(n)` first, then, under pool N, one more
    permutation of the batches.

    pool 0: consecutive slices of the permutation (random batches). pool N: the permutation cut
    into pools of N batches; each pool sorted by length (stable) and cut into batches; the
    batches shuffled.
    """
    order = rng.permutation(len(lengths))
    if pool == 0:
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    lengths = np.asarray(lengths)
    batches = []
    for start in range(0, len(order), pool * batch_size):
        chunk = order[start : start + pool * batch_size]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    return [batches[b] for b in rng.permutation(len(batches))]


def epoch_rng(seed: int, epoch: int) -> np.random.Generator:
    """The random numbers of one training epoch's example order: a function of the run's seed
    and the epoch alone, for ❄️ and 🔥 alike, so that a resumed epoch sees the same batches and
    both sides with the same seed draw the same permutation of their (same) examples."""
    return np.random.default_rng([seed, epoch])


def epoch_batches(lengths, batch_size: int, pool: int, seed: int, epoch: int) -> list[np.ndarray]:
    """The training batches of `epoch` (`length_batches` with `epoch_rng(seed, epoch)`)."""
    return length_batches(lengths, batch_size, pool, epoch_rng(seed, epoch))
