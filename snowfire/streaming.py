"""The streaming dataset: a feature set read in big blocks, the next one prefetched while the
current one is consumed, as the ❄️ trainer reads a set that does not fit in memory
(`heads.FeatureSource`, reused here, not copied).

    data = StreamingFeatureDataset("http://colleague:8000", fs_id, data="data/", shuffle=True)
    loader = DataLoader(data, batch_size=32, collate_fn=data.collate)   # num_workers=0

One request per block instead of one per example is what makes a remote reader (the service,
a bucket) fast; the items are the ones `FeatureDataset` gives, byte for byte.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from torch.utils.data import IterableDataset, get_worker_info

from snowfire.cache import FeatureSetInfo, Reader

from .dataset import _Features


class StreamingFeatureDataset(_Features, IterableDataset):
    """An iterable `torch.utils.data.IterableDataset` over one feature set, in blocks of
    `block_examples` examples in storage order (each one read), the next block read in a
    thread meanwhile. `shuffle`: the block order and the examples within each block, anew each
    epoch (seeded by `seed` and the epoch). The other arguments: `FeatureDataset`'s.

    The prefetch thread does the I/O, so use it with `num_workers=0`: several workers would
    each read the whole set (refused)."""

    def __init__(
        self,
        reader: Reader | str | os.PathLike,
        featureset: str | FeatureSetInfo,
        *,
        block_examples: int = 2048,
        shuffle: bool = False,
        seed: int = 0,
        layers: Sequence[int] | None = None,
        mix: Any = None,
        pool: str = "none",
        data: str | os.PathLike | None = None,
        labels: Sequence | None = None,
        dtype: str | None = None,
    ):
        super().__init__(
            reader,
            featureset,
            layers=layers,
            mix=mix,
            pool=pool,
            data=data,
            labels=labels,
            dtype=dtype,
        )
        if block_examples < 1:
            raise ValueError(f"block_examples: expected >= 1, got {block_examples}")
        self.block_examples, self.shuffle, self.seed = block_examples, shuffle, seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration shuffles for (otherwise counted by iterations)."""
        self.epoch = epoch

    def __iter__(self) -> Iterator[dict[str, Any]]:
        from snowfire.heads import FeatureSource

        worker = get_worker_info()
        if worker is not None and worker.num_workers > 1:
            raise ValueError(
                "StreamingFeatureDataset: use num_workers=0 (its own thread "
                f"prefetches); got {worker.num_workers} workers"
            )
        # max_bytes 0: never preload the whole set, always blocks in storage order
        source = FeatureSource(
            self.reader, self.info, self.layers, max_bytes=0, block_examples=self.block_examples
        )
        rng = np.random.default_rng([self.seed, self.epoch]) if self.shuffle else None
        self.epoch += 1
        for indices, eb in source.iterate(self.block_examples, rng):
            eb = self._reduced(eb)
            for i, index in enumerate(indices):
                yield self._item(index, eb, i)
