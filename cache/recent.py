"""The features of the texts encoded last, kept in memory by (pool, key) up to a byte bound.

A service that predicts for a stream of new texts reads each text again soon after it was
encoded (one request per task, or the two texts of a pair in a later request). Those reads
would open the segment just written; this keeps the stored values of the latest texts at hand
instead. The embed worker adds a segment's examples as it starts writing them (under the
pool's write lock, the values cast as stored) and drops them again if the write fails, so an
entry holds what the store holds, or is about to, for its key.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from .types import ExampleBatch


class RecentFeatures:
    """Least recently used first out, at most `max_bytes` held (0: keep nothing)."""

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes: expected >= 0, got {max_bytes}")
        self.max_bytes = max_bytes
        self.bytes = 0
        self._items: OrderedDict[tuple[str, str], ExampleBatch] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def add(self, pool: str, batch: ExampleBatch) -> None:
        """Keep every example of `batch` (all layers, as stored) under its key."""
        if not self.max_bytes:
            return
        for row, key in enumerate(batch.keys):
            one = batch.select([row])
            if one.nbytes > self.max_bytes:
                continue
            with self._lock:
                old = self._items.pop((pool, key), None)
                self.bytes -= 0 if old is None else old.nbytes
                self._items[pool, key] = one
                self.bytes += one.nbytes
                while self.bytes > self.max_bytes:
                    _, dropped = self._items.popitem(last=False)
                    self.bytes -= dropped.nbytes

    def drop(self, pool: str, keys: list[str]) -> None:
        """Forget `keys` (their segment was not written after all)."""
        with self._lock:
            for key in keys:
                old = self._items.pop((pool, key), None)
                self.bytes -= 0 if old is None else old.nbytes

    def get(self, pool: str, key: str) -> ExampleBatch | None:
        """The example of `key` (one-example batch, every layer), or None."""
        with self._lock:
            one = self._items.get((pool, key))
            if one is not None:
                self._items.move_to_end((pool, key))
            return one
