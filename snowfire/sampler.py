"""Batches of examples of similar length, so a padded batch is mostly tokens, not padding.

    sampler = LengthBucketSampler(data.lengths, token_budget=4096, shuffle=True, seed=0)
    loader = DataLoader(data, batch_sampler=sampler, collate_fn=data.collate)

The plan is the extractor's (`extractor.batching.bucket_batches`: sorted by length, a batch
closed when batch size x its longest example would pass the budget), or a fixed number of
examples per batch; the order of the batches is shuffled each epoch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from torch.utils.data import Sampler


class LengthBucketSampler(Sampler[list[int]]):
    """Yields lists of example indices (a `DataLoader`'s `batch_sampler`).

    lengths:      tokens per example (`FeatureDataset.lengths`)
    batch_size:   examples per batch (the last one of a length run may be smaller), or
    token_budget: at most this many padded tokens (batch size x longest) per batch; an
                  example longer than the budget goes alone
    shuffle:      the batch order, anew each epoch (seeded by `seed` and the epoch); else
                  shortest first
    """

    def __init__(
        self,
        lengths: Sequence[int] | np.ndarray,
        *,
        batch_size: int | None = None,
        token_budget: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
    ):
        if (batch_size is None) == (token_budget is None):
            raise ValueError("LengthBucketSampler: give exactly one of batch_size, token_budget")
        for name, value in (("batch_size", batch_size), ("token_budget", token_budget)):
            if value is not None and value < 1:
                raise ValueError(f"LengthBucketSampler: {name} must be >= 1, got {value}")
        lengths = np.asarray(lengths, dtype=np.int64)
        if token_budget is not None:
            from snowfire.extractor import Prepared, bucket_batches

            items = [Prepared(index=i, length=int(n), data=None) for i, n in enumerate(lengths)]
            self.batches = [[p.index for p in b] for b in bucket_batches(items, token_budget)]
        else:
            assert batch_size is not None  # exactly one of the two, checked above
            order = np.lexsort((np.arange(len(lengths)), lengths)).tolist()  # by (length, index)
            self.batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        self.shuffle, self.seed, self.epoch = shuffle, seed, 0

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration shuffles for (otherwise counted by iterations)."""
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Iterator[list[int]]:
        order: range | np.ndarray = range(len(self.batches))
        if self.shuffle:
            order = np.random.default_rng([self.seed, self.epoch]).permutation(len(self.batches))
        self.epoch += 1
        for b in order:
            yield list(self.batches[b])
