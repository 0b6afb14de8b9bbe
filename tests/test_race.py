"""compare/race.py on constructed per-example predictions: a trial far behind stops at the
first rung, two indistinguishable trials both survive, the leader never stops, an arm's own
race stops its weak trials, and the same recorded predictions give the same decisions."""

from __future__ import annotations

import numpy as np
import pytest

from snowfire.compare.race import decide, rung_epochs, seeds_schedule

N = 400


def _gold():
    return [str(v) for v in np.random.default_rng(0).integers(0, 2, N)]


def _preds(gold, correct: float, seed: int):
    """Predictions right on a `correct` share of the examples (which ones: `seed`)."""
    rng = np.random.default_rng(seed)
    right = rng.random(N) < correct
    return [g if r else ("1" if g == "0" else "0") for g, r in zip(gold, right, strict=True)]


def _right_on(gold, which):
    """Predictions right exactly on the examples `which`."""
    which = set(which)
    return [g if i in which else ("1" if g == "0" else "0") for i, g in enumerate(gold)]


def test_rungs_grow_by_eta_to_the_cap():
    assert rung_epochs(6) == [1, 2, 6]
    assert rung_epochs(40) == [1, 2, 5, 14, 40]
    assert rung_epochs(1) == [1] and rung_epochs(4, eta=2) == [1, 2, 4]
    with pytest.raises(ValueError, match=r"expected cap >= 1 and eta >= 2, got 0, 3"):
        rung_epochs(0)


def test_a_trial_far_behind_stops_and_the_leader_never_does():
    gold = _gold()
    preds = {"fire/0": [_preds(gold, 0.9, 1)], "fire/1": [_preds(gold, 0.55, 2)]}
    decisions = decide(1, "accuracy", gold, preds, {t: "fire" for t in preds})
    assert [(d.trial, d.against, d.stopped) for d in decisions] == [("fire/1", "fire/0", True)]
    d = decisions[0]
    assert d.delta.high < -0.005 and d.delta.estimate == pytest.approx(
        np.mean([p == g for p, g in zip(preds["fire/1"][0], gold, strict=True)])
        - np.mean([p == g for p, g in zip(preds["fire/0"][0], gold, strict=True)])
    )
    assert d.describe().startswith("stopped at rung 1 (behind fire/0 by ")


def test_indistinguishable_trials_both_survive():
    gold = _gold()
    base = _preds(gold, 0.8, 3)
    other = list(base)
    for i in range(0, 6):  # six examples apart: no evidence either way
        other[i] = "1" if other[i] == "0" else "0"
    preds = {"snow/0": [base], "fire/0": [other]}
    decisions = decide(1, "accuracy", gold, preds, {"snow/0": "snow", "fire/0": "fire"})
    assert len(decisions) == 1 and not decisions[0].stopped


def test_an_arm_races_its_own_trials_beside_the_overall_race():
    gold = _gold()
    preds = {
        "snow/0": [_right_on(gold, range(0, 360))],  # the overall leader: 90%
        "fire/0": [_right_on(gold, range(5, 360))],  # close to it (88.75%): kept
        "fire/1": [_right_on(gold, range(0, 280))],  # behind both (70%)
    }
    arms = {"snow/0": "snow", "fire/0": "fire", "fire/1": "fire"}
    got = {d.trial: (d.against, d.stopped) for d in decide(2, "accuracy", gold, preds, arms)}
    assert got == {"fire/0": ("snow/0", False), "fire/1": ("snow/0", True)}


def test_seeds_pair_and_decisions_replay_exactly():
    gold = _gold()
    preds = {
        "a/0": [_preds(gold, 0.85, s) for s in (7, 8)],
        "b/0": [_preds(gold, 0.83, s) for s in (9, 10)],
    }
    arms = {"a/0": "a", "b/0": "b"}
    first = decide(3, "accuracy", gold, preds, arms)
    again = decide(3, "accuracy", gold, {k: list(v) for k, v in preds.items()}, arms)
    assert [d.to_json() for d in first] == [d.to_json() for d in again]
    assert first[0].delta.seeds == (2, 2)


def test_regression_races_on_pearson():
    rng = np.random.default_rng(11)
    gold = rng.normal(size=N).tolist()
    good = (np.array(gold) + rng.normal(scale=0.3, size=N)).tolist()
    bad = (np.array(gold) + rng.normal(scale=2.0, size=N)).tolist()
    preds = {"fire/0": [good], "lora/0": [bad]}
    arms = {"fire/0": "fire", "lora/0": "lora"}
    (d,) = decide(1, "pearson", gold, preds, arms, keep_leaders=False)  # the earlier rule
    assert d.stopped and d.against == "fire/0"
    (kept,) = decide(1, "pearson", gold, preds, arms)  # lora's leader trains on to its cap
    assert not kept.stopped and kept.against == "fire/0" and kept.delta == d.delta


def test_an_arms_leader_is_kept_however_far_behind_and_its_other_trials_are_not():
    gold = _gold()
    preds = {
        "snow/0": [_right_on(gold, range(0, 360))],  # the overall leader: 90%
        "fire/0": [_right_on(gold, range(0, 240))],  # fire's leader, far behind (60%)
        "fire/1": [_right_on(gold, range(0, 236))],  # a point behind fire/0: no evidence
        "fire/2": [_right_on(gold, range(0, 120))],  # behind fire/0 too (30%)
    }
    arms = {t: t.split("/")[0] for t in preds}
    got = {d.trial: (d.against, d.stopped) for d in decide(1, "accuracy", gold, preds, arms)}
    # fire/1 has lost to the overall leader: it stops against it though its own leader cannot
    assert got == {
        "fire/0": ("snow/0", False),
        "fire/1": ("snow/0", True),
        "fire/2": ("snow/0", True),
    }
    old = decide(1, "accuracy", gold, preds, arms, keep_leaders=False)
    assert [d.stopped for d in old] == [True, True, True]


def test_bad_races_are_refused():
    with pytest.raises(ValueError, match=r"expected a margin >= 0, got -1"):
        decide(1, "accuracy", ["0"], {"a": [["0"]]}, {"a": "a"}, margin=-1)
    with pytest.raises(ValueError, match=r"no arm named for the trials \['b'\]"):
        decide(1, "accuracy", ["0"], {"a": [["0"]], "b": [["0"]]}, {"a": "a"})
    assert decide(1, "accuracy", ["0"], {"a": [["0"]]}, {"a": "a"}) == []


def test_the_seeds_double_to_what_was_asked():
    assert seeds_schedule(1) == [1] and seeds_schedule(3) == [1, 2, 3]
    assert seeds_schedule(8) == [1, 2, 4, 8]
    with pytest.raises(ValueError, match="at least one seed, got 0"):
        seeds_schedule(0)
