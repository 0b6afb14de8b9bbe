"""A stated forecast where the budget could not call the race: each arm's learning curve
(selection score against training compute) fitted with a saturating power law, extrapolated to
2× and 4× the budget, the difference of two arms given with an interval.

    y(x) = a − b · x^(−c),   a the asymptote, b > 0 the gap still to close, c > 0 its rate

is the form learning curves of neural models follow in the large (Hestness et al. 2017; Domhan
et al. 2015 use it among their parametric curves for early stopping of hyper-parameter
searches). For a fixed c the model is linear in (a, b), so the fit is least squares over a grid
of c (log-spaced, 0.05 .. 3), keeping the c with the least squared error and b >= 0 (a curve
that falls is fitted flat). The uncertainty is a residual bootstrap: refit on ŷ + resampled
residuals, R times; an arm's forecast at x is the replicates' mean and percentile interval, and
Δ between two arms pairs their replicates by index (independent fits, so the pairing is only a
convenience). With three points or fewer there is nothing to fit a three-parameter curve to:
`fit_curve` says so. When the larger run exists, `forecast_error` records how far off it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_RATES = np.geomspace(0.05, 3.0, 60)  # the grid of c
REPLICATES = 1000


@dataclass(frozen=True)
class CurveFit:
    """A fitted saturating curve and its bootstrap replicates (a, b, c per replicate)."""

    a: float
    b: float
    c: float
    replicates: np.ndarray  # (R, 3)
    last: float  # the largest x observed

    def predict(self, x: float) -> float:
        return float(self.a - self.b * x ** (-self.c))

    def draws(self, x: float) -> np.ndarray:
        """(R,) the replicates' predictions at x."""
        a, b, c = self.replicates.T
        return a - b * x ** (-c)


def _fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    """Least squares over the grid of c: (a, b, c, squared error)."""
    best = (float(y.mean()), 0.0, 1.0, float(((y - y.mean()) ** 2).sum()))
    for c in _RATES:
        design = np.stack([np.ones_like(x), -(x ** (-c))], axis=1)  # (P, 2)
        (a, b), *_ = np.linalg.lstsq(design, y, rcond=None)
        if b < 0:
            continue
        err = float(((design @ np.array([a, b]) - y) ** 2).sum())
        if err < best[3] - 1e-15:
            best = (float(a), float(b), float(c), err)
    return best


def fit_curve(
    x: Sequence[float], y: Sequence[float], replicates: int = REPLICATES, seed: int = 0
) -> CurveFit:
    """Fit y(x) = a − b x^(−c) to a learning curve (x > 0: epochs or compute)."""
    xs, ys = np.asarray(x, float), np.asarray(y, float)
    if xs.shape != ys.shape or len(xs) < 4:
        raise ValueError(
            f"fit_curve: expected at least 4 points of (x, y) to fit 3 parameters, got "
            f"{len(xs)} x and {len(ys)} y"
        )
    if (xs <= 0).any() or not np.isfinite(ys).all():
        raise ValueError("fit_curve: expected x > 0 and finite scores")
    a, b, c, _ = _fit(xs, ys)
    fitted = a - b * xs ** (-c)  # (P,)
    resid = ys - fitted
    rng = np.random.default_rng(seed)
    reps = np.array(
        [_fit(xs, fitted + rng.choice(resid, len(resid)))[:3] for _ in range(replicates)]
    )  # (R, 3)
    return CurveFit(a, b, c, reps, float(xs.max()))


@dataclass(frozen=True)
class Forecast:
    """The predicted Δ = plus − minus at `factor` × the budget, with its interval."""

    factor: float
    at: float
    delta: float
    low: float
    high: float

    def to_json(self) -> dict[str, float]:
        return {
            "factor": self.factor,
            "at": self.at,
            "delta": self.delta,
            "low": self.low,
            "high": self.high,
        }


def forecast_delta(
    minus: CurveFit, plus: CurveFit, factors: Sequence[float] = (2.0, 4.0), level: float = 0.95
) -> list[Forecast]:
    """Δ = plus − minus forecast at each factor times the budget both reached."""
    budget = max(minus.last, plus.last)
    out = []
    for f in factors:
        x = budget * f
        draws = plus.draws(x) - minus.draws(x)  # (R,)
        low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
        out.append(Forecast(f, x, plus.predict(x) - minus.predict(x), float(low), float(high)))
    return out


def forecast_error(forecast: Forecast, measured: float) -> dict[str, float | bool]:
    """How far a forecast was from the Δ measured later at that budget, and whether its
    interval held it."""
    return {
        "forecast": forecast.delta,
        "measured": measured,
        "error": measured - forecast.delta,
        "covered": forecast.low <= measured <= forecast.high,
    }
