"""Split a token sequence longer than the encoder's limit into overlapping windows, and stitch.

A sequence is `[first] content... [last]` (e.g. [CLS] ... [SEP]). Each window is
`[first] content[start:start+W] [last]` with W = max_length - 2, consecutive windows
overlapping by half a window. After encoding, every content token takes its vector from the
window in which it sits furthest from an edge (most context on both sides); [first] comes
from the first window and [last] from the last. Nothing is truncated.
"""

from __future__ import annotations

import numpy as np


def plan_windows(n_content: int, max_length: int) -> list[tuple[int, int]]:
    """[start, end) spans over the content tokens; one span when it all fits."""
    width = max_length - 2
    if width < 2:
        raise ValueError(f"max_length must be at least 4, got {max_length}")
    if n_content <= width:
        return [(0, n_content)]
    step = width // 2
    spans, start = [], 0
    while True:
        end = min(start + width, n_content)
        spans.append((start, end))
        if end == n_content:
            return spans
        start += step


def assign_tokens(n_content: int, spans: list[tuple[int, int]]) -> np.ndarray:
    """(n_content,) index of the window each content token is read from."""
    owner = np.zeros(n_content, dtype=np.int64)
    best = np.full(n_content, -1, dtype=np.int64)
    for w, (start, end) in enumerate(spans):
        pos = np.arange(start, end)
        margin = np.minimum(pos - start, end - 1 - pos)  # context on the thinner side
        better = margin > best[start:end]
        owner[start:end][better] = w
        best[start:end][better] = margin[better]
    return owner


def stitch(window_states: list[np.ndarray], spans: list[tuple[int, int]]) -> np.ndarray:
    """Rebuild (n_content + 2, L, D) from per-window states (w_len + 2, L, D)."""
    if len(spans) == 1:
        return window_states[0]
    n_content = spans[-1][1]
    owner = assign_tokens(n_content, spans)  # (n_content,)
    parts = [window_states[0][:1]]  # [first] from window 0
    for w, (start, _) in enumerate(spans):
        mine = np.flatnonzero(owner == w)  # contiguous: owners only increase
        if len(mine):
            parts.append(window_states[w][1 + mine[0] - start : 2 + mine[-1] - start])
    parts.append(window_states[-1][-1:])  # [last] from the last window
    return np.concatenate(parts, axis=0)
