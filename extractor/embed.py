"""Compute-and-cache embedding (`POST /v1/embed`): texts in, misses encoded and stored.

The worker is built from an `ExtractConfig` (encoder, options, dtype, tiles, token budget), so
a request's examples get the content keys `snowfire extract` gives them (same pool: encoder
identity + dtype; same key: the canonical words). Hits are read from the store. Misses go to one
encoder thread, which takes every request waiting (up to the token budget, waiting at most
`max_wait_ms` for more after the first), encodes the union of their misses by `extract`'s own
path (`bucketed` batches under the same token budget, `encode_segment`), commits them as one
segment under the pool's write lock and wakes the requests, which then read everything from
the store. So a text gives the same bytes whichever way it entered the store, and is encoded
once however many requests ask for it at the same time. At most `max_queue` requests wait for
the encoder at once; one more is refused at once (EmbedBusyError), before it waits.

Serving predictions takes a faster way to the same values (`features`): a request whose texts
are encoded in a round gets that round's arrays, cast as the segment stores them
(cache/written.py), as soon as they are encoded, and its heads run while the segment is
written; the latest texts' features stay in memory (cache/recent.py, RECENT_BYTES), so a
text asked again soon after is not read back from its segment.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field, replace

from snowfire.cache import ExampleBatch, RecentFeatures, Store, digest, example_key, segment_arrays

from .base import Encoder, TextInput, check_texts
from .config import ExtractConfig
from .encoders import load_encoder
from .run import bucketed, encode_segment

log = logging.getLogger(__name__)

#: Bytes of the latest texts' features `features` keeps in memory (cache/recent.py).
RECENT_BYTES = 64 << 20


class EmbedBusyError(RuntimeError):
    """`max_queue` requests are already waiting for the encoder: this one is refused (the
    service answers 429 with Retry-After)."""

    def __init__(self, waiting: int) -> None:
        super().__init__(
            f"{waiting} requests are already waiting for the encoder, its queue's limit"
        )
        self.waiting = waiting


@dataclass
class _Job:
    pool: str
    pair_encoding: str
    dtype: str  # of the pool: what the segment is written in
    items: list[tuple[str, TextInput]]  # (key, text) the store lacked
    tokens: int
    keep: bool = False  # answered with the round's features before its segment is written
    done: Future = field(default_factory=Future)


class EmbedWorker:
    """One encoder per pair encoding, one thread encoding for every request.

    config: the encoder and how to store (its store, task and input are not read: the worker
    writes to `store`, the texts come with the requests); each pair encoding a request asks
    for loads the config's encoder with that pair encoding. A caller may ask for another
    storage dtype than the config's (`dtype=`: a ❄️ run trained on int8 features reads its
    texts from the int8 pool, as `snowfire predict` would extract them); the encoder is the
    same, only the pool differs."""

    def __init__(
        self,
        store: Store,
        config: ExtractConfig,
        *,
        max_wait_ms: float = 5.0,
        max_queue: int | None = None,
        on_batch=None,
        recent_bytes: int = RECENT_BYTES,
    ):
        if max_queue is not None and max_queue < 1:
            raise ValueError(f"max_queue: expected >= 1 or None, got {max_queue}")
        self.store, self.config = store, config
        self.max_wait = max_wait_ms / 1000.0
        self.max_queue = max_queue  # requests waiting for the encoder at once; None: no bound
        self._waiting = 0
        self.recent = RecentFeatures(recent_bytes)  # the latest texts' features, as stored
        self._waiting_lock = threading.Lock()
        self._encoders: dict[str, Encoder] = {}
        self._pools: dict[tuple[str, str], str] = {}  # (pair encoding, dtype) -> pool id
        self._load_lock = threading.Lock()
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self.rounds = 0  # encoder-thread rounds that encoded something
        self._on_batch = on_batch or (lambda n: None)  # examples per round, for /metrics
        self._thread = threading.Thread(target=self._loop, name="snowfire-embed", daemon=True)
        self._thread.start()
        self.pool(config.pair_encoding)  # load now: a bad spec fails at start, not later

    # ------------------------------------------------------------------ requests
    def encoder(self, pair_encoding: str) -> Encoder:
        with self._load_lock:
            if pair_encoding not in self._encoders:
                cfg = replace(self.config, pair_encoding=pair_encoding)
                enc = load_encoder(cfg.encoder, **cfg.encoder_options())
                if enc.ordered:
                    raise ValueError(
                        f"encoder {cfg.encoder!r} carries state from one example to the next "
                        "(ELMo --elmo-state stateful): its features depend on the other texts, "
                        "so it cannot embed texts on their own; serve a stateless encoder"
                    )
                self._encoders[pair_encoding] = enc
            return self._encoders[pair_encoding]

    def pool(self, pair_encoding: str, dtype: str | None = None) -> str:
        """The pool texts of this pair encoding are stored in (dtype: the config's unless
        given)."""
        enc = self.encoder(pair_encoding)
        dtype = dtype or self.config.dtype
        with self._load_lock:
            if (pair_encoding, dtype) not in self._pools:
                pool = self.store.ensure_pool(enc.identity, dtype, enc.num_layers, enc.dim)
                self._pools[pair_encoding, dtype] = pool
            return self._pools[pair_encoding, dtype]

    def keys(
        self, texts: list[TextInput], pair_encoding: str, dtype: str | None = None
    ) -> list[str]:
        check_texts(texts)  # the service's schema refuses them first; Python callers here
        pool = self.pool(pair_encoding, dtype)
        return [example_key(pool, t.payload()) for t in texts]

    def ensure(
        self,
        texts: list[TextInput],
        keys: list[str],
        pair_encoding: str,
        timeout: float = 600.0,
        dtype: str | None = None,
    ) -> list[bool]:
        """Make every key stored (encoding the misses); return which were hits."""
        dtype = dtype or self.config.dtype
        pool = self.pool(pair_encoding, dtype)
        missing = set(self.store.missing_keys(pool, keys))
        if missing:
            self._submit(pool, pair_encoding, dtype, texts, keys, missing, timeout, keep=False)
        return [k not in missing for k in keys]

    def features(
        self,
        texts: list[TextInput],
        keys: list[str],
        pair_encoding: str,
        layers: list[int] | None,
        timeout: float = 600.0,
        dtype: str | None = None,
    ) -> tuple[ExampleBatch, list[bool]]:
        """(the features of `keys`, in order, with `layers` (None: all), which were stored
        already): `ensure` and then `Store.read_keys`, the same values, but the texts encoded
        for this call come from the encoder's own arrays (cast as stored, cache/written.py)
        without waiting for their segment's write, and texts encoded lately from memory
        (cache/recent.py); only the others are read from the store."""
        dtype = dtype or self.config.dtype
        pool = self.pool(pair_encoding, dtype)
        unique = list(dict.fromkeys(keys))
        parts: list[ExampleBatch] = []
        rows: dict[str, int] = {}  # key -> its row in the parts' concatenation

        def add(batch: ExampleBatch) -> None:
            base = sum(len(p) for p in parts)
            for i, key in enumerate(batch.keys):
                rows.setdefault(key, base + i)
            parts.append(batch.with_layers(layers))

        for key in unique:
            if (one := self.recent.get(pool, key)) is not None:
                add(one)
        rest = [k for k in unique if k not in rows]
        missing = set(self.store.missing_keys(pool, rest)) if rest else set()
        if missing:
            fresh = self._submit(pool, pair_encoding, dtype, texts, keys, missing, timeout, True)
            if fresh is not None:  # None: another writer stored them meanwhile
                add(fresh.select([i for i, k in enumerate(fresh.keys) if k in missing]))
        if stored := [k for k in unique if k not in rows]:
            add(self.store.read_keys(pool, stored, layers))
        batch = parts[0] if len(parts) == 1 else ExampleBatch.concat(parts)
        return batch.select([rows[k] for k in keys]), [k not in missing for k in keys]

    def _submit(self, pool, pair_encoding, dtype, texts, keys, missing, timeout, keep):
        """Queue the missing texts for the encoder thread and wait for their round: None once
        stored, or with `keep` the round's `ExampleBatch` (every layer, as stored) as soon as
        it is encoded (None when another writer had stored them all)."""
        first: dict[str, TextInput] = {}
        for key, text in zip(keys, texts, strict=True):
            if key in missing:
                first.setdefault(key, text)
        tokens = sum(len(t.words_a) + len(t.words_b or ()) for t in first.values())
        job = _Job(pool, pair_encoding, dtype, list(first.items()), tokens, keep)
        with self._waiting_lock:
            if self.max_queue is not None and self._waiting >= self.max_queue:
                raise EmbedBusyError(self._waiting)
            self._waiting += 1
        try:
            self._queue.put(job)
            return job.done.result(timeout=timeout)  # re-raises the encoder thread's error
        finally:
            with self._waiting_lock:
                self._waiting -= 1

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=10)

    # ------------------------------------------------------------------ encoder thread
    def _loop(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            jobs = [job] + self._gather(job)
            for group in _by_pool(jobs):
                try:
                    self._encode(group)
                except BaseException as err:  # noqa: BLE001 - every waiter gets the error
                    log.exception("embedding failed")
                    for j in group:
                        if not j.done.done():  # a `keep` job may have its features already
                            j.done.set_exception(err)
                else:
                    for j in group:
                        if not j.done.done():
                            j.done.set_result(None)

    def _gather(self, first: _Job) -> list[_Job]:
        """More waiting jobs, until the token budget is used or max_wait has passed."""
        more, tokens = [], first.tokens
        deadline = time.monotonic() + self.max_wait
        while tokens < self.config.token_budget:
            try:
                job = self._queue.get(timeout=max(deadline - time.monotonic(), 0))
            except queue.Empty:
                break
            if job is None:
                self._queue.put(None)  # close after this round
                break
            more.append(job)
            tokens += job.tokens
        return more

    def _encode(self, jobs: list[_Job]) -> None:
        pool, encoder = jobs[0].pool, self._encoders[jobs[0].pair_encoding]
        wanted: dict[str, TextInput] = {}
        for job in jobs:
            for key, text in job.items:
                wanted.setdefault(key, text)
        with self.store.writer(pool):  # another process may have stored some meanwhile
            todo = set(self.store.missing_keys(pool, list(wanted)))
            texts = [(k, t) for k, t in wanted.items() if k in todo]
            if not texts:
                return
            items = [(k, encoder.prepare(i, t)) for i, (k, t) in enumerate(texts)]
            out_keys, parts = encode_segment(encoder, bucketed(items, self.config.token_budget))
            self.rounds += 1  # counted before any request is answered
            self._on_batch(len(out_keys))
            arrays = segment_arrays(out_keys, parts, jobs[0].dtype)
            fresh = arrays.batch(out_keys)
            self.recent.add(pool, fresh)  # first: a request after an answer below finds them
            for job in jobs:
                if job.keep:  # its request goes on to its heads while the segment is written
                    job.done.set_result(fresh)
            seg_id = digest({"embed": out_keys}, 24)
            try:
                self.store.write_segment(
                    pool, seg_id, out_keys, arrays, jobs[0].dtype, self.config.tiles
                )
            except BaseException:
                self.recent.drop(pool, out_keys)  # not stored after all
                raise


def _by_pool(jobs: list[_Job]) -> list[list[_Job]]:
    groups: dict[str, list[_Job]] = {}
    for job in jobs:
        groups.setdefault(job.pool, []).append(job)
    return list(groups.values())
