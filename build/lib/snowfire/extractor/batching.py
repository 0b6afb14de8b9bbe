"""Token-budget batching with length bucketing (deterministic)."""

from __future__ import annotations

from collections.abc import Sequence

from .base import Prepared


def bucket_batches(items: Sequence[Prepared], token_budget: int) -> list[list[Prepared]]:
    """Group items so that batch_size x longest <= token_budget, similar lengths together.

    Items are sorted by (length, index), so the plan depends only on the inputs; an item longer
    than the budget goes alone.
    """
    if token_budget < 1:
        raise ValueError(f"token_budget must be positive, got {token_budget}")
    batches: list[list[Prepared]] = []
    current: list[Prepared] = []
    for item in sorted(items, key=lambda p: (p.length, p.index)):
        longest = max([p.length for p in current] + [item.length])
        if current and longest * (len(current) + 1) > token_budget:
            batches.append(current)
            current = []
        current.append(item)
    if current:
        batches.append(current)
    return batches


def ordered_batches(items: Sequence[Prepared], batch_size: int) -> list[list[Prepared]]:
    """Input order, `batch_size` examples each (for stateful encoders)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    return [list(items[i : i + batch_size]) for i in range(0, len(items), batch_size)]
