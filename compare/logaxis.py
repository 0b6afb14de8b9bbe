"""A log x axis labelled with plain numbers (0.2, 0.5, 1, 2), never crowded: the cost axes of
`snowfire compare`'s plots, where compute often spans less than two decades and matplotlib's
own minor labels (2×10⁻¹, 3×10⁻¹, ...) run into each other."""

from __future__ import annotations

import math

#: Which minor ticks carry a label, by how many decades the axis spans (none past two).
LABELLED_SUBS = ((1.0, (1.5, 2, 3, 5, 7)), (2.0, (2, 5)))


def plain_number(value: float, _position=None) -> str:
    """`value` as a reader writes it: 0.25, 3, 1500, 20k, 1.5M."""
    for threshold, unit, suffix in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if value >= threshold:
            return f"{value / unit:g}{suffix}"
    return f"{value:g}" if value > 0 else ""


def plain_log_x(ax) -> None:
    """Put `ax`'s x on a log scale labelled by `plain_number`; call it after plotting."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    low, high = ax.get_xlim()
    subs = next((s for span, s in LABELLED_SUBS if math.log10(high / low) <= span), None)
    plain = FuncFormatter(plain_number)
    ax.xaxis.set_major_formatter(plain)
    if subs is None:
        ax.xaxis.set_minor_formatter(NullFormatter())
        return
    ax.xaxis.set_minor_locator(LogLocator(base=10, subs=subs))
    ax.xaxis.set_minor_formatter(plain)
