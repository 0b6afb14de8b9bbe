"""Constructed stores for the layer sweep: a user task (CSV files) whose stored features carry
the label in one layer only, or in none, written through the store's own writer with the
manifest `snowfire extract` would give them (the source file's sha256), so the sweep finds
them as it finds extracted ones.

    data, spec = planted(tmp_path, carrier=2)      # layer 2 of 5 carries the label
    data, spec = planted(tmp_path, carrier=None)   # labels independent of every layer
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from snowfire.cache import Store, digest, example_key
from snowfire.tasks import resolve_task, split_source

from . import WORDS

LAYERS, DIM = 5, 8
#: The encoder identity the constructed features record.
IDENTITY = {"name": "planted", "spec": "planted"}


#: Words without punctuation (a CSV field stays one field).
PLAIN = [w for w in WORDS if w.isalpha()]


def _texts(rng: np.random.Generator, n: int) -> list[list[str]]:
    return [[str(w) for w in rng.choice(PLAIN, size=rng.integers(4, 9))] for _ in range(n)]


def planted(
    root: Path,
    carrier: int | None,
    sizes: tuple[tuple[str, int], ...] = (("train", 320), ("dev", 200)),
    signal: float = 0.7,
    seed: int = 0,
    store_dir: Path | None = None,
    identity: dict | None = None,
) -> tuple[Path, Path]:
    """(the spec file, the store): a classification task (labels pos/neg, balanced at random)
    whose every token holds N(0, 1) noise at every layer, plus ±`signal` along one direction
    at layer `carrier` (none: the label is in no layer), recorded as made by the encoder
    `identity` (default IDENTITY) in `store_dir` (default ROOT/store). The default signal
    leaves a pooled probe about 96% right: not separable at once, so a mix keeps moving onto
    the carrier."""
    rng = np.random.default_rng(seed)
    data = root / "planted"
    data.mkdir(parents=True, exist_ok=True)
    splits = {}
    for split, n in sizes:
        labels = rng.integers(0, 2, n)
        texts = _texts(rng, n)
        rows = ["text,label"] + [
            f"{' '.join(t)},{'pos' if y else 'neg'}" for t, y in zip(texts, labels, strict=True)
        ]
        (data / f"{split}.csv").write_text("\n".join(rows) + "\n")
        splits[split] = (texts, labels)
    spec_file = data / "planted.json"
    spec_file.write_text(
        json.dumps(
            {
                "name": "planted",
                "kind": "classification",
                "format": "csv",
                "labels": ["neg", "pos"],
                "splits": {s: f"{s}.csv" for s, _ in sizes},
            }
        )
    )
    spec = resolve_task(str(spec_file))
    store = Store(store_dir or root / "store")
    identity = identity or IDENTITY
    pool = store.ensure_pool(identity, "float32", LAYERS, DIM)
    direction = rng.normal(size=DIM)  # (D,)
    direction /= np.linalg.norm(direction)
    for split, (texts, labels) in splits.items():
        parts, keys, payload = [], [], []
        for words, y in zip(texts, labels, strict=True):
            n = len(words) + 2  # [CLS] words [SEP]
            feats = rng.normal(size=(n, LAYERS, DIM)).astype(np.float32)  # (S, L, D)
            if carrier is not None:
                feats[:, carrier] += (signal if y else -signal) * direction
            word_ids = np.array([-1, *range(len(words)), -1], dtype=np.int32)  # (S,)
            parts.append((feats, word_ids, np.zeros(n, dtype=np.int8), n))
            payload.append({"a": words, "b": None})
            keys.append(example_key(pool, payload[-1]))
        with store.writer(pool):
            store.write_segment(pool, digest(keys, 24), keys, parts, "float32")
        manifest = {
            "id": f"planted-{split}-{digest({'pool': pool, 'keys': keys}, 8)}",
            "name": f"planted-{split}",
            "task": "planted",
            "split": split,
            "encoder": identity,
            "encoder_id": pool,
            "dtype": "float32",
            "num_layers": LAYERS,
            "dim": DIM,
            "num_tokens": sum(len(p[1]) for p in parts),
            "source": split_source(spec, None, split),
        }
        store.write_featureset(manifest, keys, payload)
    return spec_file, store.path
