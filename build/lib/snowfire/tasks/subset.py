"""The training examples a capped run uses: one draw shared by ❄️ heads and 🔥 fine-tuning, so
that a comparison with the same cap and seed trains both on the same examples."""

from __future__ import annotations

import numpy as np


def train_subset(total: int, cap: int | None, seed: int) -> list[int] | None:
    """`cap` of `total` example indices drawn at random with `seed`, in file order; None (all of
    them) when there is no cap or it is not smaller than the split."""
    if cap is None or cap >= total:
        return None
    return sorted(np.random.default_rng(seed).choice(total, cap, replace=False).tolist())
