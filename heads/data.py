"""Where a trainer's features come from: a feature set, preloaded when small, else streamed.
(The targets a head trains on are `tasks.task_targets`, the 🔥 models' too.)"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from snowfire.cache import ExampleBatch, FeatureSetInfo, Reader, split_pages
from snowfire.tasks import length_batches

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
        scales=None if eb.scales is None else eb.scales[rows],  # (N, Lsel) int8 sets
    )


def _floats(eb: ExampleBatch) -> ExampleBatch:
    """A batch of an int8 set dequantised to float32 (float batches as they are)."""
    return eb if eb.scales is None else eb.dequantized("float32")


def _batches(lengths: np.ndarray, batch_size: int, rng, pool: int) -> list[np.ndarray]:
    """Positions in batches: in order without `rng`, else an epoch's (tasks.length_batches)."""
    if rng is None:
        n = len(lengths)
        return [np.arange(i, min(i + batch_size, n)) for i in range(0, n, batch_size)]
    return length_batches(lengths, batch_size, pool, rng)


#: The most bytes of features a streamed block holds (with `block_examples`): two blocks are
#: in memory while streaming, the one trained on and the next, read meanwhile.
BLOCK_BYTES = 256 << 20


class FeatureSource:
    """Batches of one feature set for a trainer, never the whole set in memory unless it fits.

    A set whose features fit in `max_bytes` is read once (segment-wise, fast; over REST in
    pages, cache/paging.py) and sliced in memory. A bigger one streams: its indices in
    on-disk order are cut into blocks of at most `block_examples` examples and `block_bytes`
    bytes (the examples' lengths say their size), each block is one fast read (prefetched in
    a thread while the model trains on the previous one), and training shuffles the block
    order and the examples within each block (a shuffle buffer). Memory then stays bounded by
    two blocks, whatever the set's size.
    """

    def __init__(
        self,
        reader: Reader,
        info: FeatureSetInfo,
        layers: list[int] | None,
        max_bytes: int,
        block_examples: int = 2048,
        subset: list[int] | None = None,
        block_bytes: int = BLOCK_BYTES,
    ):
        self.reader, self.info, self.layers = reader, info, layers
        self.block_examples, self.block_bytes = block_examples, block_bytes
        #: the examples served (a capped training set), else all of them
        self.examples = list(range(info.num_examples)) if subset is None else list(subset)
        n_layers = len(layers) if layers else info.num_layers
        per_token = info.bytes_per_token(n_layers)  # an int8 set stays int8 here
        #: (n,) bytes of each example's features in the set, as held here
        self.sizes = np.asarray(reader.featureset_lengths(info.id), dtype=np.int64) * per_token
        self.nbytes = int(self.sizes[self.examples].sum())
        self.all: ExampleBatch | None = None
        self.order: list[int] = []
        if self.nbytes <= max_bytes:
            self.all = self._read(self.examples)
        else:
            log.info("%s: %.1f GB of features, streaming", info.id, self.nbytes / 1e9)
            chosen = set(self.examples)
            self.order = [i for i in reader.storage_order(info.id) if i in chosen]
        self._pool = ThreadPoolExecutor(max_workers=1)

    @property
    def num_examples(self) -> int:
        return len(self.examples)

    @property
    def streaming(self) -> bool:
        return self.all is None

    def _read(self, indices: list[int]) -> ExampleBatch:
        """Features as stored: an int8 set is held as int8 and dequantised a batch at a time."""
        dtype = "int8" if self.info.dtype == "int8" else None
        return self.reader.read(self.info.id, indices=indices, layers=self.layers, dtype=dtype)

    def iterate(self, batch_size: int, rng: np.random.Generator | None = None, pool: int = 0):
        """Yield (indices, ExampleBatch); shuffled when `rng` is given, else a fixed order.
        Indices are the feature set's example numbers. `pool` (with `rng`): length-bucketed
        batches of similar token counts (tasks.length_batches), within each streamed block."""
        if self.all is not None:
            for pos in _batches(np.diff(self.all.offsets), batch_size, rng, pool):
                pos = pos.tolist()
                yield [self.examples[p] for p in pos], _floats(take(self.all, pos))
            return
        cuts = split_pages(self.sizes[self.order], self.block_bytes, self.block_examples)
        blocks = [self.order[lo:hi] for lo, hi in cuts]
        if rng is not None:
            blocks = [blocks[b] for b in rng.permutation(len(blocks))]
        pending = self._pool.submit(self._read, blocks[0]) if blocks else None
        for b, block in enumerate(blocks):
            assert pending is not None  # block b was submitted before its turn
            data = pending.result()
            if b + 1 < len(blocks):
                pending = self._pool.submit(self._read, blocks[b + 1])
            for chosen in _batches(np.diff(data.offsets), batch_size, rng, pool):
                chosen = chosen.tolist()
                yield [block[j] for j in chosen], _floats(take(data, chosen))
