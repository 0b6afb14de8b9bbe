"""Convergence marking on constructed learning curves (compare/convergence.py), degenerate
restarts (compare/restarts.py) and the learning-curve plot (compare/curves.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from snowfire.compare import mark_curve, plot_curves, read_curve, restart_spread
from snowfire.compare.convergence import CONVERGED, STILL_IMPROVING, TOO_SHORT


def _epochs(*scores):
    return list(enumerate(scores, start=1))


def test_a_rising_curve_is_still_improving_at_the_cap():
    mark = mark_curve(_epochs(0.50, 0.60, 0.70), cap=3)
    assert mark.status == STILL_IMPROVING and not mark.converged
    assert mark.rise == pytest.approx(0.10) and mark.noise == 0.0 and mark.best_at == 3
    assert "at its cap, epoch 3: +0.1000 over the best before" in mark.reason
    # decelerating but still gaining more than a thousandth: still improving (the spread of all
    # changes, 0.036, would have called it flat)
    assert mark_curve(_epochs(0.50, 0.60, 0.65, 0.68), cap=4).status == STILL_IMPROVING


def test_a_flat_curve_converged():
    mark = mark_curve(_epochs(0.50, 0.60, 0.60, 0.60), cap=4)
    assert mark.status == CONVERGED and mark.rise == 0.0 and mark.best_at == 2
    assert mark.reason == "no gain in its last epoch: best 0.6000 first reached at epoch 2 of 4"
    tiny = mark_curve(_epochs(0.8, 0.8005, 0.8009), cap=3)  # monotone, +0.0004: under min_rise
    assert tiny.status == CONVERGED and tiny.rise == pytest.approx(0.0004)


def test_a_noisy_flat_curve_whose_last_point_is_its_best_converged():
    # declines -0.03 and -0.01: noise √((0.03² + 0.01²) / 2) = 0.02236; the last epoch adds
    # 0.83 - 0.82 = 0.01 over the best before, within it
    mark = mark_curve(_epochs(0.80, 0.82, 0.79, 0.81, 0.80, 0.83), cap=6)
    assert mark.status == CONVERGED and mark.best_at == 6
    assert mark.noise == pytest.approx(np.sqrt((0.03**2 + 0.01**2) / 2), abs=1e-12)
    assert mark.rise == pytest.approx(0.01)
    assert "within its noise 0.0224" in mark.reason
    # the same jitter on a trend of +0.03 per epoch: the last gain (0.05) is more than the noise
    rising = mark_curve(_epochs(0.60, 0.66, 0.64, 0.70, 0.69, 0.75), cap=6)
    assert rising.status == STILL_IMPROVING
    assert rising.noise == pytest.approx(np.sqrt((0.02**2 + 0.01**2) / 2), abs=1e-12)
    assert mark_curve(_epochs(0.60, 0.66, 0.64, 0.70, 0.69, 0.75), cap=6, k=4).converged


def test_a_curve_that_rose_then_fell_converged():
    mark = mark_curve(_epochs(0.60, 0.70, 0.75, 0.73, 0.72), cap=5)
    assert mark.status == CONVERGED and mark.best == 0.75 and mark.best_at == 3
    assert mark.rise == pytest.approx(0.72 - 0.75)  # the last epoch against the best before
    early = mark_curve(_epochs(0.60, 0.70, 0.69, 0.68), cap=10)  # early stopping, patience 2
    assert early.converged and early.last_at == 4


def test_points_within_an_epoch_and_curves_too_short_to_tell():
    fire = [(0.5, 0.30), (1.0, 0.50), (1.5, 0.60), (2.0, 0.65)]  # 🔥 scored twice an epoch
    mark = mark_curve(fire, cap=2)
    assert mark.status == STILL_IMPROVING and mark.rise == pytest.approx(0.65 - 0.50)
    flat = [(0.5, 0.30), (1.0, 0.62), (1.5, 0.61), (2.0, 0.62)]
    assert mark_curve(flat, cap=2).converged
    short = mark_curve([(1, 0.5)], cap=1)
    assert short.status == TOO_SHORT and not short.converged and short.rise is None
    halves = mark_curve([(0.5, 0.4), (1.0, 0.5)], cap=1)
    assert halves.status == TOO_SHORT
    cut = mark_curve(_epochs(0.5, 0.6, 0.7), cap=5)  # a rising run that ended before its cap
    assert cut.status == STILL_IMPROVING and "epoch 3 of 5 (cut short)" in cut.reason


def test_marking_on_simulated_curves_of_known_shape():
    """10 epochs of jitter N(0, 0.01²): on a flat curve the last epoch beats the rest by more
    than the declines' RMS rarely; on a trend of +0.02 per epoch it almost always does."""
    rng = np.random.default_rng(7)
    flat = [mark_curve(_epochs(*(0.8 + rng.normal(0, 0.01, 10))), cap=10) for _ in range(400)]
    rising = [
        mark_curve(_epochs(*(0.6 + 0.02 * np.arange(10) + rng.normal(0, 0.01, 10))), cap=10)
        for _ in range(400)
    ]
    false_alarms = sum(not m.converged for m in flat) / 400
    caught = sum(not m.converged for m in rising) / 400
    assert false_alarms <= 0.02, false_alarms
    assert caught > 0.80, caught


def test_read_curve_from_both_trainers_logs(tmp_path):
    snow = [
        {"epoch": 1, "train_loss": 0.9, "dev": {"pearson": 0.5, "spearman": 0.4}, "seconds": 1.0},
        {"epoch": 2, "train_loss": 0.7, "dev": {"pearson": 0.6}},
    ]
    fire = [
        {
            "epoch": 1,
            "step": 10,
            "train_loss": 0.8,
            "lr": 1e-5,
            "dev": {"pearson": 0.7},
            "trainable": 6,
            "seconds": 3.0,
        }
    ]
    for name, records in (("snow", snow), ("fire", fire)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert read_curve(tmp_path / "snow", "pearson") == [(1.0, 0.5), (2.0, 0.6)]
    assert read_curve(tmp_path / "fire", "pearson") == [(1.0, 0.7)]
    (tmp_path / "snow" / "log.jsonl").write_text(json.dumps(snow[0]) + "\n{oops\n")
    with pytest.raises(ValueError, match=r"snow/log.jsonl:2: expected a JSON record"):
        read_curve(tmp_path / "snow", "pearson")
    with pytest.raises(
        ValueError,
        match=r"log.jsonl: learning curve: record 0: expected 'epoch' "
        r"and 'selection' \(or 'dev'\) with 'accuracy'",
    ):
        read_curve(tmp_path / "fire", "accuracy")


def test_bad_curves_are_refused():
    with pytest.raises(ValueError, match="at least one point, got none"):
        mark_curve([])
    with pytest.raises(
        ValueError,
        match=r"point 2: expected positions in increasing order, "
        r"got 1.0 after 2.0",
    ):
        mark_curve([(1, 0.5), (2, 0.6), (1, 0.7)])
    with pytest.raises(ValueError, match=r"point 1: expected finite numbers, got \(2.0, nan\)"):
        mark_curve([(1, 0.5), (2, float("nan"))])
    with pytest.raises(ValueError, match=r"expected window > 0, got 0"):
        mark_curve(_epochs(0.5, 0.6), window=0)


# -- restarts -----------------------------------------------------------------------------------


def test_a_seed_far_below_the_others_is_degenerate():
    spread = restart_spread([0.80, 0.81, 0.79, 0.40])
    assert spread["degenerate"] == [3] and spread["seeds"] == 4
    # median 0.795, MAD 0.01: z = 0.6745 (0.40 - 0.795) / 0.01 = -26.6
    assert "far below the others: 0.4000 against their median 0.7950 (z -26.6)" == spread["why"][3]
    assert spread["sd"] == pytest.approx(np.std([0.80, 0.81, 0.79, 0.40], ddof=1), abs=1e-12)
    assert spread["min"] == 0.40 and spread["max"] == 0.81 and spread["median"] == 0.795


def test_ordinary_spread_and_exact_ties_flag_nothing():
    assert restart_spread([0.80, 0.82, 0.74])["degenerate"] == []  # z = -2.0
    assert restart_spread([0.80, 0.80, 0.77])["degenerate"] == []  # MAD 0: resolution 0.01
    assert restart_spread([0.80, 0.80, 0.74])["degenerate"] == [2]  # z = -4.0
    assert restart_spread([0.80, 0.40])["degenerate"] == []  # two seeds: no median to be far from
    one = restart_spread([0.8])
    assert one["sd"] is None and one["degenerate"] == []


def test_a_seed_near_the_untrained_level_is_degenerate():
    # majority label 0.51: seed 1 gained 0.03 over it, the other 0.29; under half: "off"
    spread = restart_spread([0.80, 0.54], floor=0.51)
    assert spread["degenerate"] == [1]
    assert spread["why"][1] == "near the untrained level 0.5100: 0.5400 against 0.8000"
    assert restart_spread([0.80, 0.70], floor=0.51)["degenerate"] == []  # gained 0.19 of 0.29
    both = restart_spread([0.80, 0.81, 0.79, 0.52], floor=0.5)["why"][3]
    assert both.startswith("far below the others") and "; near the untrained level" in both


def test_restart_spread_refuses_bad_scores():
    with pytest.raises(ValueError, match="at least one seed's score, got none"):
        restart_spread([])
    with pytest.raises(ValueError, match=r"seed 1: expected a finite score, got nan"):
        restart_spread([0.5, float("nan")])


# -- the plot -----------------------------------------------------------------------------------


def test_plot_curves_writes_a_png_marking_the_cells_still_improving(tmp_path):
    cells = [
        {
            "mode": "snow",
            "head": "esim",
            "seed": 0,
            "curve": _epochs(0.5, 0.6, 0.62, 0.62),
            "status": CONVERGED,
        },
        {"mode": "snow", "head": "esim", "seed": 1, "curve": _epochs(0.5, 0.58, 0.61, 0.62)},
        {"mode": "snow", "head": "linear", "seed": 0, "curve": _epochs(0.3, 0.32, 0.33)},
        {
            "mode": "fire",
            "seed": 0,
            "curve": [(0.5, 0.2), (1, 0.4), (1.5, 0.5), (2, 0.6)],
            "status": STILL_IMPROVING,
        },
    ]
    path = tmp_path / "curves-stsb.png"
    drawn = plot_curves("stsb", "pearson", cells, path)
    assert drawn == {"lines": 4, "marked": ["fine-tuning, seed 0"]}
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    with pytest.raises(
        ValueError,
        match=r"cell 0: expected mode 'snow' or 'fire' and a "
        r"non-empty curve, got mode 'ice'",
    ):
        plot_curves("stsb", "pearson", [{"mode": "ice", "curve": [(1, 0.5)]}], path)
