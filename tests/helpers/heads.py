"""Hand-built store batches and tiny heads: what the head contract (tests/test_heads_contract.py)
runs every head on, and what the collate and learning tests reuse.

    CASES, IDS        every head x the task kinds and texts it models (and a few variants)
    make_head         a head of a case with small hyper-parameters (TINY)
    make_example      one example as the store holds it: features, word ids, type ids, pair start
    examples_for, targets_for, example_batch, batch_for   three examples, targets, batches
"""

from __future__ import annotations

import numpy as np
import torch

from snowfire.cache import ExampleBatch
from snowfire.heads import HEADS, HeadBatch, build_head, collate

L, D = 3, 8  # tiny store: 3 layers of 8
NUM_LABELS = {"classification": 3, "regression": 1, "tagging": 4}
TINY = {  # small hyper-parameters so the suite runs in seconds
    "mlp": {"hidden": 6},
    "bcn": {"ff_dim": 6, "hidden": 5, "maxout_dims": (8,), "pool_size": 2},
    "esim": {"hidden": 5},
    "bilstm-crf": {"hidden": 5},
    "bilstm-softmax": {"hidden": 5},
}
VARIANTS = {  # name in the suite -> (head, extra hyper-parameters)
    "bilstm-crf-pieces": ("bilstm-crf", {"over_pieces": True}),
    "bilstm-softmax-pieces": ("bilstm-softmax", {"over_pieces": True}),
    "esim-pooled": ("esim", {"pooled": True}),
}


def _cases() -> list[tuple[str, str, bool]]:
    cases = []
    for name, spec in [*HEADS.items(), *((v, HEADS[n]) for v, (n, _) in VARIANTS.items())]:
        pairs = {"any": (False, True), "single": (False,), "pair": (True,)}[spec.texts]
        cases += [(name, k, p) for k in spec.kinds for p in pairs if not (k == "tagging" and p)]
    return cases


CASES = _cases()
IDS = [f"{n}-{k}-{'pair' if p else 'single'}" for n, k, p in CASES]


def make_head(name: str, kind: str, pair: bool, dim: int = D) -> torch.nn.Module:
    base, extra = VARIANTS.get(name, (name, {}))
    hparams = {**TINY.get(base, {}), **extra}
    name = base
    return build_head(
        name, kind=kind, pair=pair, num_layers=L, dim=dim, num_labels=NUM_LABELS[kind], **hparams
    )


# ------------------------------------------------------------------ hand-built store batches
def make_example(
    rng, words_a: list[int], words_b: list[int] | None = None, *, joint: bool = True, dim: int = D
):
    """Pieces per word -> (features (S, L, D), word_ids, type_ids, pair_start), BERT-style
    specials: [CLS] a [SEP] (b [SEP] | [CLS] b [SEP])."""

    def text(pieces):
        return [w for w, n in enumerate(pieces) for _ in range(n)]

    word_ids = [-1, *text(words_a), -1]
    pair_start = -1
    if words_b is not None:
        pair_start = len(word_ids) + (0 if joint else 1)
        word_ids += ([] if joint else [-1]) + text(words_b) + [-1]
    s = len(word_ids)
    type_ids = [0] * s if pair_start < 0 else [int(i >= pair_start) for i in range(s)]
    if words_b is not None and joint:
        type_ids[pair_start - 1] = 0  # the [SEP] closing a is segment 0
    feats = rng.standard_normal((s, L, dim)).astype(np.float32)
    return feats, np.array(word_ids, np.int32), np.array(type_ids, np.int8), pair_start


def example_batch(examples) -> ExampleBatch:
    lengths = [len(e[0]) for e in examples]
    return ExampleBatch(
        features=np.concatenate([e[0] for e in examples]),
        offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        word_ids=np.concatenate([e[1] for e in examples]),
        type_ids=np.concatenate([e[2] for e in examples]),
        pair_starts=np.array([e[3] for e in examples], np.int64),
        layers=list(range(L)),
        keys=[f"k{i}" for i in range(len(examples))],
    )


def examples_for(pair: bool, seed: int = 0, sizes=((2, 1, 1), (1, 3, 1, 2, 1), (1, 1))):
    """Three examples of different lengths (pieces per word), pairs built from them."""
    rng = np.random.default_rng(seed)
    return [make_example(rng, list(a), list(reversed(a)) + [1] if pair else None) for a in sizes]


def targets_for(kind: str, examples, seed: int = 0):
    rng = np.random.default_rng(seed)
    if kind == "classification":
        return rng.integers(0, NUM_LABELS[kind], len(examples)).tolist()
    if kind == "regression":
        return rng.uniform(1, 5, len(examples)).tolist()
    return [rng.integers(0, NUM_LABELS[kind], int(e[1].max()) + 1).tolist() for e in examples]


def batch_for(kind: str, examples, targets=None) -> HeadBatch:
    return collate(example_batch(examples), targets, kind=kind)
