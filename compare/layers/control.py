"""Control tasks (Hewitt & Liang, EMNLP 2019, "Designing and Interpreting Probes with Control
Tasks", sec. 2): the task's labels reassigned at random *per type* — per word type for tagging,
per text for classification — so that a probe can fit them only by memorising types, not by
reading what the representation says about the input:

    u(t)       = sha256(seed, t) read as a number in [0, 1)     one uniform draw per type t
    control(t) = min {k : F(k) > u(t)}                          F: cumulative distribution of
                                                                the task's training labels

Every occurrence of a type gets the same label (a text repeated in dev gets the one it had in
train), and the labels keep the training distribution in expectation. A probe's *selectivity*
is its task accuracy minus its accuracy on the control task, on the same report examples: high
when the probe reads the labels off the features, near 0 when it could as well have memorised.
The draw is a hash of the type, not a random stream, so a type's label does not depend on the
order or the company it is read in (train, selection and report agree without sharing state).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

import numpy as np

#: The control task's own seed: one control task per sweep, whatever the probes' seeds.
CONTROL_SEED = 0


def distribution(targets: np.ndarray, num_labels: int) -> np.ndarray:
    """(K,) the share of each label index among the training targets."""
    counts = np.bincount(np.asarray(targets, dtype=np.int64), minlength=num_labels)  # (K,)
    if counts.sum() == 0:
        raise ValueError("control task: expected training labels, got none")
    return counts / counts.sum()


def uniform(item: str, seed: int = CONTROL_SEED) -> float:
    """u(t): a draw in [0, 1) fixed by the type and the seed."""
    digest = hashlib.sha256(f"{seed}\0{item}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def control_labels(
    types: Sequence[str], shares: np.ndarray, seed: int = CONTROL_SEED
) -> np.ndarray:
    """(N,) the control label index of each type (module docstring); `shares` (K,) from
    `distribution`."""
    cdf = np.cumsum(shares)  # (K,)
    u = np.array([uniform(t, seed) for t in types], dtype=np.float64)  # (N,)
    return np.minimum(np.searchsorted(cdf, u, side="right"), len(shares) - 1).astype(np.int64)


def text_type(words_a: Sequence[str], words_b: Sequence[str] | None = None) -> str:
    """The type of a text (classification: one label per distinct text or pair of texts)."""
    return json.dumps([list(words_a), None if words_b is None else list(words_b)])
