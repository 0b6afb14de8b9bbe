"""Sliding windows for long inputs: coverage, best-context ownership, stitching (brute force)."""

from __future__ import annotations

import numpy as np
import pytest

from snowfire.extractor.windows import assign_tokens, plan_windows, stitch


@pytest.mark.parametrize("n", [1, 5, 14, 15, 29, 30, 100, 257])
@pytest.mark.parametrize("max_length", [4, 8, 16])
def test_windows_cover_and_owners_have_most_context(n, max_length):
    spans = plan_windows(n, max_length)
    assert spans[0][0] == 0 and spans[-1][1] == n
    assert all(e - s <= max_length - 2 for s, e in spans)
    owner = assign_tokens(n, spans)
    for i in range(n):  # brute force: no window gives token i more context on its thinner side
        margins = [min(i - s, e - 1 - i) for s, e in spans if s <= i < e]
        s, e = spans[owner[i]]
        assert s <= i < e and min(i - s, e - 1 - i) == max(margins)
    assert np.all(np.diff(owner) >= 0)


def test_stitch_takes_each_token_from_its_owner():
    n, max_length = 40, 12
    spans = plan_windows(n, max_length)
    rng = np.random.default_rng(0)
    states = [rng.normal(size=(e - s + 2, 2, 3)) for s, e in spans]
    out = stitch(states, spans)
    owner = assign_tokens(n, spans)
    assert out.shape == (n + 2, 2, 3)
    np.testing.assert_array_equal(out[0], states[0][0])
    np.testing.assert_array_equal(out[-1], states[-1][-1])
    for i in range(n):
        w = owner[i]
        np.testing.assert_array_equal(out[1 + i], states[w][1 + i - spans[w][0]])


def test_too_small_limit_is_refused():
    with pytest.raises(ValueError, match="max_length must be at least 4, got 3"):
        plan_windows(10, 3)
