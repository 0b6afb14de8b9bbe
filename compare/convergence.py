"""Did a cell converge, or was it still improving when its epochs ran out?

A cell's learning curve is its dev score after each epoch, (position, score) pairs with the
position in epochs (1, 2, ...; a point within an epoch at a fraction, e.g. 1.5). The curve is
split at one `window` (an epoch) before its last point into the earlier points E and the last
window's points W, and

    rise  = max(W) − max(E)                     what the last epoch added over the best before
    noise = √(mean of d² over the declines d)   d = y_k − y_{k−1} < 0, 0 when nothing declined

The cell is "still improving at the cap" when rise > max(k · noise, min_rise): its best score
came in the last window and beat everything before by more than the curve's own jitter and by a
gain the tables can show. Otherwise it converged: it peaked earlier (rise ≤ 0; early stopping
then ends a run before its cap), or it is flat within its noise. A curve shorter than one window
(one epoch) cannot show either and is "too short to tell". Neither earns a verdict.

Why the noise comes from the curve, and from its declines:
  * consecutive dev scores of one run are scored on the same dev examples, so the evaluation
    set's bootstrap sd (about a point for STS-B's 1,500 pairs) measures how the score would move
    on other examples, not how a change between two epochs on these ones could arise by chance;
    it would call a head that still gains half a point per epoch converged;
  * the seeds' spread says how far restarts land apart, not whether one run is still climbing,
    and a cell is one seed;
  * the changes between epochs of a flat curve are up as often as down and of the same size, so
    the declines measure the jitter of a change (their RMS is its sd under a symmetric jitter);
    a rising curve has few or no declines, so its rises are not mistaken for noise. The spread
    of all changes would be: a rising curve that decelerates (+10, +5, +3) has a spread as large
    as its last gain.
`min_rise` (default 0.001: 0.1 on the tables' ×100 scale, their last digit) keeps a strictly
monotone curve that gains a thousandth per epoch from counting as still improving.

A short curve has few declines to measure its noise with: three points of a flat curve rise
monotonically one time in six, and are then marked still improving. That errs on the side of no
verdict; a budget that wants one gives its curves the epochs to show that they flattened.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from snowfire.rundir import selection_scores

CONVERGED = "converged"
STILL_IMPROVING = "still improving at the cap"
TOO_SHORT = "too short to tell"
MIN_RISE = 0.001


@dataclass(frozen=True)
class Convergence:
    """What a cell's learning curve says (see the module docstring)."""

    status: str  # CONVERGED, STILL_IMPROVING or TOO_SHORT
    reason: str  # in words, with the numbers
    best: float  # best dev score
    best_at: float  # where (epochs)
    last_at: float  # the curve's last point (epochs)
    rise: float | None  # max(W) − max(E); None when the curve is too short
    noise: float  # RMS of the curve's declines

    @property
    def converged(self) -> bool:
        return self.status == CONVERGED

    def to_json(self) -> dict[str, object]:
        return {
            "status": self.status,
            "reason": self.reason,
            "best": self.best,
            "best_at": self.best_at,
            "last_at": self.last_at,
            "rise": self.rise,
            "noise": self.noise,
        }


def mark_curve(
    curve: Sequence[tuple[float, float]],
    cap: float | None = None,
    window: float = 1.0,
    k: float = 1.0,
    min_rise: float = MIN_RISE,
) -> Convergence:
    """Mark one cell's learning curve: (epoch position, dev score) pairs in training order.

    cap: the epochs the cell was allowed (for the words: a rising curve that ended before its
    cap was cut short, e.g. killed, and is not converged either).
    """
    points = [(float(x), float(y)) for x, y in curve]
    if not points:
        raise ValueError("mark_curve: expected a learning curve with at least one point, got none")
    for i, (x, y) in enumerate(points):
        if not (math.isfinite(x) and math.isfinite(y)):
            raise ValueError(f"mark_curve: point {i}: expected finite numbers, got ({x}, {y})")
        if i and x <= points[i - 1][0]:
            raise ValueError(
                f"mark_curve: point {i}: expected positions in increasing order, "
                f"got {x} after {points[i - 1][0]}"
            )
    for name, value, least in (
        ("window", window, "> 0"),
        ("k", k, ">= 0"),
        ("min_rise", min_rise, ">= 0"),
    ):
        if not (value > 0 or (value == 0 and least == ">= 0")):
            raise ValueError(f"mark_curve: expected {name} {least}, got {value}")
    xs, ys = [x for x, _ in points], [y for _, y in points]
    best = max(ys)
    best_at = xs[ys.index(best)]  # the first time the best was reached
    declines = [b - a for a, b in zip(ys, ys[1:], strict=False) if b < a]
    noise = math.sqrt(sum(d * d for d in declines) / len(declines)) if declines else 0.0
    last = xs[-1]
    earlier = [y for x, y in points if x <= last - window + 1e-9]
    if not earlier:
        return Convergence(
            TOO_SHORT,
            f"one epoch of curve (up to epoch {last:g}): nothing to compare its last score with",
            best,
            best_at,
            last,
            None,
            noise,
        )
    rise = max(y for x, y in points if x > last - window + 1e-9) - max(earlier)
    threshold = max(k * noise, min_rise)
    if rise > threshold:
        where = (
            f"its cap, epoch {cap:g}"
            if cap is not None and last >= cap - 1e-9
            else (f"epoch {last:g}" + (f" of {cap:g} (cut short)" if cap is not None else ""))
        )
        reason = (
            f"best {best:.4f} in the last epoch, at {where}: {rise:+.4f} over the best "
            f"before, more than its noise {noise:.4f}"
        )
        return Convergence(STILL_IMPROVING, reason, best, best_at, last, rise, noise)
    if rise <= 0:
        reason = (
            f"no gain in its last epoch: best {best:.4f} first reached at epoch "
            f"{best_at:g} of {last:g}"
        )
    else:
        reason = (
            f"last epoch added {rise:+.4f}, within its noise {noise:.4f} (or under {min_rise:g})"
        )
    return Convergence(CONVERGED, reason, best, best_at, last, rise, noise)


def curve_of(records: Iterable[Mapping], metric: str) -> list[tuple[float, float]]:
    """(epoch, selection score) pairs from a run's per-epoch log records (RUN/log.jsonl lines of
    the ❄️ and 🔥 trainers: {"epoch": ..., "selection": {metric: ...}, ...}, "dev" in runs made
    before the honest protocol; a 🔥 record's "within": the points scored inside that epoch,
    same form, before it)."""
    curve = []
    for i, record in enumerate(records):
        try:
            for point in record.get("within", ()):
                curve.append((float(point["epoch"]), float(selection_scores(point)[metric])))
            curve.append((float(record["epoch"]), float(selection_scores(record)[metric])))
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(
                f"learning curve: record {i}: expected 'epoch' and 'selection' (or 'dev') with "
                f"{metric!r}, got {dict(record)!r}"
            ) from err
    return curve


def read_curve(run: str | Path, metric: str) -> list[tuple[float, float]]:
    """The learning curve in RUN/log.jsonl (file and line named when a line is malformed)."""
    path = Path(run) / "log.jsonl"
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{number}: expected a JSON record, got {line[:60]!r}") from err
    try:
        return curve_of(records, metric)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from err
