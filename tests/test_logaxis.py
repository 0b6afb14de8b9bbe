"""The cost axes' log x labels: plain numbers, and never two labels on top of each other."""

import pytest

from snowfire.compare.logaxis import plain_log_x, plain_number


def test_plain_number_by_hand():
    cases = {0.25: "0.25", 3.0: "3", 1500.0: "1500", 2e4: "20k", 1.5e6: "1.5M", 2e9: "2G", 0.0: ""}
    assert {v: plain_number(v) for v in cases} == cases


def _labels(low: float, high: float):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.8))  # one panel of the budget plot's width
    ax.plot([low, high], [0, 1], "o")
    plain_log_x(ax)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    lo, hi = ax.get_xlim()
    shown = [
        (t.label1.get_text(), t.label1.get_window_extent(renderer))
        for t in ax.xaxis.get_major_ticks() + ax.xaxis.get_minor_ticks()
        if t.label1.get_visible() and t.label1.get_text() and lo <= t.get_loc() <= hi
    ]
    plt.close(fig)
    return shown


@pytest.mark.parametrize(
    "low, high",
    [(0.18, 2.5), (0.2, 1.9), (0.13, 0.52), (0.05, 3.0), (400.0, 3000.0), (1e3, 2.2e7)],
)
def test_labels_are_plain_and_never_overlap(low, high):
    shown = _labels(low, high)
    assert len(shown) >= 2, f"{low}..{high}: too few labels {[s for s, _ in shown]}"
    by_x = sorted(shown, key=lambda s: s[1].x0)
    for (a, box_a), (b, box_b) in zip(by_x, by_x[1:], strict=False):
        assert box_a.x1 <= box_b.x0, f"{low}..{high}: label {a!r} runs into {b!r}"
    assert all("^" not in s and "times" not in s for s, _ in shown), shown
