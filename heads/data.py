"""Where a trainer's features come from: a feature set, preloaded when small, else streamed."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from cache import ExampleBatch, FeatureSetInfo

log = logging.getLogger(__name__)


def take(eb: ExampleBatch, indices: Sequence[int]) -> ExampleBatch:
    """The sub-batch of examples `indices` (positions in `eb`), in that order."""
    starts, ends = eb.offsets[:-1][indices], eb.offsets[1:][indices]
    ranges = [np.arange(s, e) for s, e in zip(starts, ends, strict=True)]
    rows = np.concatenate(ranges) if ranges else np.zeros(0, dtype=np.int64)
    lengths = ends - starts
    return ExampleBatch(
        features=eb.features[rows],  # (N, Lsel, D)
        offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        word_ids=eb.word_ids[rows],
        type_ids=eb.type_ids[rows],
        pair_starts=eb.pair_starts[indices],
        layers=eb.layers,
        keys=[eb.keys[i] for i in indices],
    )


class FeatureSource:
    """Batches of one feature set for a trainer.

    A set whose features fit in `max_bytes` is read once (segment-wise, fast) and sliced in
    memory; a bigger one is read batch by batch from the store or the service, the next batch
    prefetched in a thread while the model trains on the current one.
    """

    def __init__(self, reader, info: FeatureSetInfo, layers: list[int] | None, max_bytes: int):
        self.reader, self.info, self.layers = reader, info, layers
        n_layers = len(layers) if layers else info.num_layers
        itemsize = 2 if info.dtype == "float16" else 4
        tokens = info.manifest.get("num_tokens")
        est = (tokens or info.num_examples * 64) * n_layers * info.dim * itemsize
        self.all: ExampleBatch | None = None
        if est <= max_bytes:
            self.all = reader.read(info.id, indices=list(range(info.num_examples)), layers=layers)
        else:
            log.info("%s: %.1f GB of features, streaming from the store", info.id, est / 1e9)
        self._pool = ThreadPoolExecutor(max_workers=1)

    def get(self, indices: Sequence[int]) -> ExampleBatch:
        if self.all is not None:
            return take(self.all, list(indices))
        return self.reader.read(self.info.id, indices=[int(i) for i in indices], layers=self.layers)

    def batches(self, order: Sequence[int], batch_size: int):
        """Yield (indices, ExampleBatch) in `order`, prefetching one batch ahead."""
        chunks = [list(order[i : i + batch_size]) for i in range(0, len(order), batch_size)]
        pending = self._pool.submit(self.get, chunks[0]) if chunks else None
        for k, chunk in enumerate(chunks):
            eb = pending.result()
            if k + 1 < len(chunks):
                pending = self._pool.submit(self.get, chunks[k + 1])
            yield chunk, eb
