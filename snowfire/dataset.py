"""Cached features as a PyTorch dataset: one example's all-layer features (and its label where
the task has one) per item, a collate that pads, and the same bytes as `Reader.read`.

    data = FeatureDataset(reader, "minilm-sst2-train-...", data="data/", layers=[4, 5, 6])
    item = data[0]           # {"features": (S, L, D), "word_ids": (S,), "label": (), ...}
    loader = DataLoader(data, batch_sampler=LengthBucketSampler(data.lengths, batch_size=32),
                        collate_fn=data.collate)
    batch = next(iter(loader))   # heads.HeadBatch: features (B, S, L, D), mask (B, S), labels

Shapes: S tokens of one example (every token the encoder produced, [CLS] and [SEP] included:
word_ids -1 marks them), L the layers read (one after `mix`), D hidden size, B batch. With
`pool`, an example is one row (S = 1). A map-style item is one read of the store; over a
service or a bucket, `StreamingFeatureDataset` (streaming.py) reads big prefetched blocks
(over REST, each a read in pages: cache/paging.py).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from snowfire.cache import POOLS, ExampleBatch, FeatureSetInfo, Reader, open_reader, reduce_batch

#: Every pool of an item: none (every token), or the service's (cache.POOLS).
ITEM_POOLS = ("none", *POOLS)


class _Features:
    """What both datasets share: the set, the layers, the reduction, the labels, the lengths
    and the collate (the arguments: `FeatureDataset`)."""

    def __init__(
        self,
        reader: Reader | str | os.PathLike,
        featureset: str | FeatureSetInfo,
        *,
        layers: Sequence[int] | None = None,
        mix: tuple[Sequence[float], float] | dict[str, Any] | None = None,
        pool: str = "none",
        data: str | os.PathLike | None = None,
        labels: Sequence | None = None,
        dtype: str | None = None,
    ):
        self.reader = open_reader(reader) if isinstance(reader, (str, os.PathLike)) else reader
        fs_id = featureset.id if isinstance(featureset, FeatureSetInfo) else featureset
        self.info = self.reader.get_featureset(fs_id)
        self.layers = None if layers is None else [int(x) for x in layers]
        n_layers = len(self.layers) if self.layers is not None else self.info.num_layers
        self.mix = _mix(mix, n_layers)
        if pool not in ITEM_POOLS:
            raise ValueError(f"pool: expected one of {', '.join(ITEM_POOLS)}, got {pool!r}")
        if dtype not in (None, "float16", "float32"):
            raise ValueError(f"dtype: expected None, float16 or float32, got {dtype!r}")
        self.pool, self.dtype = pool, dtype
        self.kind = self._kind()
        self.targets = self._targets(data, labels)
        if self.targets is not None and self.kind == "tagging" and pool != "none":
            raise ValueError(f"pool {pool!r}: {self.info.task} labels every word; pool none")
        self._lengths: np.ndarray | None = None

    def __len__(self) -> int:
        return self.info.num_examples

    def _kind(self) -> str:
        """The task's kind where the set is a task's split (what collate pads labels as)."""
        from snowfire.tasks import TASKS

        task = self.info.task
        return TASKS[task].kind if task is not None and task in TASKS else "classification"

    def _targets(self, data, labels) -> list | np.ndarray | None:
        if data is not None and labels is not None:
            raise ValueError("give data (the task's files) or labels, not both")
        n = self.info.num_examples
        if labels is not None:
            if len(labels) != n:
                raise ValueError(f"labels: {len(labels)} given for {n} examples of {self.info.id}")
            return labels
        if data is None:
            return None
        from snowfire.tasks import get_task, read_split, task_targets

        if self.info.task is None or self.info.split is None:
            raise ValueError(
                f"data: {self.info.id} is no task split (extracted from --input); "
                "give labels instead"
            )
        examples = read_split(self.info.task, data, self.info.split)
        if len(examples) != n:
            raise ValueError(
                f"feature set {self.info.id} holds {n} examples but {self.info.task}/"
                f"{self.info.split} in {data} has {len(examples)}: not the data it was made from"
            )
        return task_targets(get_task(self.info.task), examples)

    def _read(self, indices: list[int]) -> ExampleBatch:
        return self.reader.read(self.info.id, indices=indices, layers=self.layers, dtype=self.dtype)

    def _reduced(self, eb: ExampleBatch) -> ExampleBatch:
        """The batch as items hold it: mixed and/or pooled (float32 then), dtype converted."""
        if self.mix is not None or self.pool != "none":
            eb = reduce_batch(eb, pool=self.pool, mix=self.mix)
        if self.dtype is not None and eb.features.dtype != self.dtype:
            eb = eb.dequantized(self.dtype)
        return eb

    def _item(self, index: int, eb: ExampleBatch, i: int) -> dict[str, Any]:
        """Example `index` of the set, which is example `i` of `eb` (already reduced)."""
        s, e = int(eb.offsets[i]), int(eb.offsets[i + 1])
        item = {
            "features": torch.from_numpy(eb.features[s:e]),  # (S, L, D)
            "word_ids": torch.from_numpy(eb.word_ids[s:e].astype(np.int64)),  # (S,)
            "type_ids": torch.from_numpy(eb.type_ids[s:e].astype(np.int64)),  # (S,)
            "pair_start": int(eb.pair_starts[i]),
            "key": eb.keys[i],
            "index": index,
        }
        if self.targets is not None:
            item["label"] = torch.as_tensor(np.asarray(self.targets[index]))  # () or (T,)
        return item

    @property
    def lengths(self) -> np.ndarray:
        """(n,) tokens per example as stored (for `LengthBucketSampler`): the reader's
        `featureset_lengths`, asked once (no features read)."""
        if self._lengths is None:
            lengths = self.reader.featureset_lengths(self.info.id)
            self._lengths = np.asarray(lengths, dtype=np.int64)
        return self._lengths

    def collate(self, items: list[dict[str, Any]]):
        """Pad a list of items into a `heads.HeadBatch` (what every ❄️ head reads):
        features (B, S, L, D) float32 zero-padded at the end, mask (B, S) bool (True on real
        tokens), word_ids (B, S) (-1 on specials and padding), type_ids (B, S), labels (B,) or
        (B, T) tags (-100 on padding) where the items have labels; pairs also get their two
        texts' pieces (features_a, mask_a, ...) and tagging sets the word-level fields."""
        from snowfire.heads import collate

        if not items:
            raise ValueError("collate: no items")
        lengths = [len(it["features"]) for it in items]
        eb = ExampleBatch(
            features=np.concatenate([it["features"].numpy() for it in items]),  # (N, L, D)
            offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),  # (B + 1,)
            word_ids=np.concatenate([it["word_ids"].numpy() for it in items]),  # (N,)
            type_ids=np.concatenate([it["type_ids"].numpy() for it in items]),  # (N,)
            pair_starts=np.array([it["pair_start"] for it in items], dtype=np.int64),  # (B,)
            layers=self.layers if self.layers is not None else list(range(self.info.num_layers)),
            keys=[it["key"] for it in items],
        )
        has = ["label" in it for it in items]
        if any(has) and not all(has):
            raise ValueError("collate: some items have labels and some not")
        labels = [it["label"].numpy() for it in items] if all(has) else None
        tagging = self.kind == "tagging"
        targets = labels if labels is None or tagging else np.stack(labels)  # (B,) but tagging
        return collate(eb, targets, kind=self.kind)


class FeatureDataset(_Features, Dataset):
    """A map-style `torch.utils.data.Dataset` over one feature set: item i is example i's
    features as `Reader.read` returns them (byte for byte; reduced when `mix`/`pool` ask),
    its word and type ids, and its label when `data` or `labels` give them. Batch with
    `collate` (and `LengthBucketSampler` for less padding).

    reader:     a `cache.Reader` (`snowfire.open_store(...)`), or its location
    featureset: the set's id or its `FeatureSetInfo`
    layers:     the layer indices read, in that order (default all)
    mix:        (weights, gamma) or {"weights": [...], "gamma": g}: `gamma * sum_l w_l h_l`
                over the layers read, the weights as given (a run's scalar_mix.json holds them)
    pool:       none, mean, max (over word pieces), first (the first token), cls ([CLS])
    data:       the task data directory: labels of the set's task and split (tasks/)
    labels:     or the labels themselves, one per example (class index, score, tag indices)
    dtype:      None: as stored (an int8 set dequantised to float32); float16 or float32
    """

    def __getitem__(self, index: int) -> dict[str, Any]:
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} out of range for {len(self)} examples")
        index = index % len(self)
        return self._item(index, self._reduced(self._read([index])), 0)


def _mix(mix, n_layers: int) -> tuple[list[float], float] | None:
    """(weights, gamma) from a pair or a {"weights", "gamma"} dict; one weight per layer."""
    if mix is None:
        return None
    if isinstance(mix, dict):
        unknown = set(mix) - {"weights", "gamma"}
        if unknown or "weights" not in mix:
            raise ValueError(
                f"mix: expected {{'weights': [...], 'gamma': g}}, got keys {sorted(mix)}"
            )
        weights, gamma = mix["weights"], mix.get("gamma", 1.0)
    else:
        weights, gamma = mix
    weights = [float(w) for w in weights]
    if len(weights) != n_layers:
        raise ValueError(f"mix: {len(weights)} weights for {n_layers} layers read (one each)")
    return weights, float(gamma)
