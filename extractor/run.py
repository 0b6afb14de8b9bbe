"""Run an encoder over examples once and store every layer (the ❄️ half of the method).

The plan is deterministic: unique examples are ordered by (length, first position), cut into
segments of about `segment_tokens` tokens, and each segment into batches by a token budget.
A segment's id hashes its keys. A re-run skips committed segments and recomputes the one a
kill interrupted, so `kill -9` then the same command gives the store an uninterrupted run
gives, with no duplicates.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from snowfire.cache import (
    QUANTIZATION,
    FeatureSetInfo,
    Store,
    digest,
    example_key,
    token_bytes,
    versions,
)

from .base import EXTRACTOR_VERSION, Encoder, Prepared, TextInput, check_texts
from .batching import bucket_batches, ordered_batches
from .config import ExtractConfig

log = logging.getLogger(__name__)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "x"


def bucketed(items: list[tuple[str, Prepared]], token_budget: int):
    """The batches of one segment's (key, Prepared), bucketed by length under the token budget
    (`bucket_batches`): the same items and budget give the same batches, so the same bytes."""
    key_of = {p.index: k for k, p in items}
    return [
        [(key_of[p.index], p) for p in b]
        for b in bucket_batches([p for _, p in items], token_budget)
    ]


def plan_segments(
    encoder: Encoder, items: list[tuple[str, Prepared]], cfg: ExtractConfig, seg_tokens: int
):
    """[segment: [batch: [(key, Prepared)]]] in a fixed order: the segments `extract` writes
    and the batches it encodes each in (the extraction benchmarks replay them)."""
    segments, current, size = [], [], 0
    if encoder.ordered:
        batches = ordered_batches([p for _, p in items], cfg.batch_size)
        key_of = {p.index: k for k, p in items}
        for batch in batches:
            current.append([(key_of[p.index], p) for p in batch])
            size += sum(p.length for p in batch)
            if size >= seg_tokens:
                segments.append(current)
                current, size = [], 0
    else:
        chunk: list[tuple[str, Prepared]] = []
        for kp in sorted(items, key=lambda kp: (kp[1].length, kp[1].index)):
            chunk.append(kp)
            size += kp[1].length
            if size >= seg_tokens:
                segments.append(bucketed(chunk, cfg.token_budget))
                chunk, size = [], 0
        if chunk:
            segments.append(bucketed(chunk, cfg.token_budget))
    if current:
        segments.append(current)
    return segments


def encode_segment(encoder, batches, written: set | None = None, on_batch=None):
    """(keys, parts for write_segment) of a segment's planned batches, leaving out keys in
    `written` (and adding the new ones to it); on_batch(examples, tokens) after each batch."""
    keys, parts = [], []
    for batch in batches:
        encoded = encoder.encode([p for _, p in batch])
        tokens = 0
        for (key, _), enc in zip(batch, encoded, strict=True):
            tokens += enc.features.shape[0]
            if written is None or key not in written:
                if written is not None:
                    written.add(key)
                keys.append(key)
                parts.append((enc.features, enc.word_ids, enc.type_ids, enc.pair_start))
        if on_batch is not None:
            on_batch(len(batch), tokens)
    return keys, parts


def _run_here(encoder, store, pool, work, fmt, written, bar) -> None:
    """Encode the planned segments in order and write each in a background thread (fmt: the
    segments' dtype and tiles)."""
    start, n_tokens = time.perf_counter(), 0

    def progress(examples: int, tokens: int) -> None:
        nonlocal n_tokens
        n_tokens += tokens
        bar.update(examples)
        bar.set_postfix(tok_s=f"{n_tokens / max(time.perf_counter() - start, 1e-9):.0f}")

    # a segment is written by one background thread while the next one is encoded; at
    # most one write is pending (memory: two segments), and a write's error stops the run
    writes = ThreadPoolExecutor(max_workers=1, thread_name_prefix="snowfire-write")
    pending: Future | None = None
    try:
        for seg_id, done, seg in work:
            out_keys, parts = encode_segment(encoder, seg, written, progress)
            if pending is not None:
                pending.result()  # re-raises the previous write's error
                pending = None
            if parts and not done:
                pending = writes.submit(store.write_segment, pool, seg_id, out_keys, parts, *fmt)
        if pending is not None:
            pending.result()
    finally:
        writes.shutdown(wait=True)  # never leave a write running behind an error


def extract(
    encoder: Encoder,
    texts: list[TextInput],
    store: Store,
    *,
    task: str | None,
    split: str | None,
    config: ExtractConfig,
    name: str | None = None,
    source: dict[str, Any] | None = None,
    runner: Callable[..., None] | None = None,
) -> FeatureSetInfo:
    """Encode `texts` (skipping what the store holds) and record them as one feature set.

    config: how to batch and store (dtype, tiles, token_budget, segment_tokens, batch_size,
    progress); `encoder` was loaded from its encoder options. source: where the texts came
    from (recorded in the manifest). runner: how the planned segments are encoded and written;
    None: here, in this process; `extractor.ray_run.RayRunner`: on a pool of Ray actors, each
    writing its own segments.
    """
    from tqdm import tqdm

    if not texts:
        raise ValueError("nothing to extract: the input holds no examples")
    check_texts(texts)  # before the store is touched: a refused text leaves it as it was
    carried = encoder.identity.get("batch_size", config.batch_size) if encoder.ordered else None
    if carried not in (None, config.batch_size):
        raise ValueError(
            f"ExtractConfig.batch_size: the encoder carries its state across batches of "
            f"{carried} examples (its identity), the config plans batches of {config.batch_size}"
        )
    fmt = (config.dtype, config.tiles)  # of the segments this run writes (checked by the config)
    bytes_per_token = token_bytes(config.dtype, encoder.num_layers, encoder.dim)
    seg_tokens = config.segment_tokens or max(256, (64 << 20) // bytes_per_token)
    pool = store.ensure_pool(encoder.identity, config.dtype, encoder.num_layers, encoder.dim)
    keys = [example_key(pool, t.payload()) for t in texts]
    with store.writer(pool):
        stored_before = set(keys) - set(store.missing_keys(pool, keys))
        if encoder.ordered:  # state runs through every example in order
            items = [
                (k, encoder.prepare(i, t)) for i, (k, t) in enumerate(zip(keys, texts, strict=True))
            ]
        else:
            first = {k: i for i, k in reversed(list(enumerate(keys)))}
            items = [
                (k, encoder.prepare(i, texts[i]))
                for k, i in sorted(first.items(), key=lambda x: x[1])
            ]
        segments = plan_segments(encoder, items, config, seg_tokens)
        work = []  # (segment id, committed?, batches to encode)
        for seg in segments:
            seg_id = digest([k for batch in seg for k, _ in batch], 24)
            done = store.has_segment(pool, seg_id)
            if not encoder.ordered:  # encode only what no earlier command stored
                seg = [
                    b
                    for b in ([kp for kp in batch if kp[0] not in stored_before] for batch in seg)
                    if b
                ]
                if done or not seg:
                    continue  # committed by an earlier (maybe killed) run of the same plan
            work.append((seg_id, done, seg))
        total = sum(len(b) for _, _, seg in work for b in seg)
        bar = tqdm(total=total, unit="ex", desc="extract", disable=not config.progress)
        if runner is not None:
            if encoder.ordered:
                raise ValueError(
                    "an ordered encoder (ELMo with --elmo-state stateful) carries its state "
                    "through every example in order: it runs in one process, not on Ray"
                )
            runner(pool, [(seg_id, b) for seg_id, _, b in work], fmt, bar)  # none done
        else:
            _run_here(encoder, store, pool, work, fmt, set(stored_before), bar)
        bar.close()
        fs_name = name or (f"{task}-{split}" if task else "input")
        fs_id = f"{slug(encoder.identity.get('spec', 'enc'))}-{slug(fs_name)}-" + digest(
            {"pool": pool, "keys": keys}, 8
        )
        manifest = {
            "id": fs_id,
            "name": fs_name,
            "task": task,
            "split": split,
            "encoder": encoder.identity,
            "encoder_id": pool,
            "dtype": config.dtype,
            **({"quantization": QUANTIZATION} if config.dtype == "int8" else {}),
            "num_layers": encoder.num_layers,
            "dim": encoder.dim,
            "source": source or {},
            "extractor": {
                "version": EXTRACTOR_VERSION,
                "ordered": encoder.ordered,
                "tiles": config.tiles,  # of the segments this run wrote
            },
            "versions": versions(),
        }
        return store.write_featureset(manifest, keys, [t.payload() for t in texts])
