"""The verdict statistic (compare/interval.py, compare/verdict.py): every metric's resampled
score against tasks.evaluate on the resample built out, the full-sample estimate against
tasks.evaluate, the 95% interval's coverage of a known Δ on simulated cells, identical sides,
the restarts' variance by hand, the verdict words and the errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from snowfire.compare import BUDGET_LIMITED, Interval, bootstrap, call, task_verdict, weigh
from snowfire.compare import zero_training_words as zero_words
from snowfire.compare.convergence import CONVERGED, RACED, STILL_IMPROVING, Convergence
from snowfire.compare.interval import METRICS, resampled_scores, restart_variance
from snowfire.tasks import evaluate, get_task

TOL = 1e-12
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "I-ORG"]

# -- constructed predictions, one generator per kind of task ------------------------------------


def _labels(rng, task, n, seeds, right=0.7):
    labels = get_task(task).labels
    gold = [labels[i] for i in rng.integers(0, len(labels), n)]
    preds = [
        [g if rng.random() < right else labels[rng.integers(0, len(labels))] for g in gold]
        for _ in range(seeds)
    ]
    return gold, preds


def _scores(rng, n, seeds):
    gold = np.round(rng.uniform(0, 5, n), 1)  # rounded: ties, as in STS-B's gold
    preds = [np.round(np.clip(gold + rng.normal(0, 1, n), 0, 5), 1).tolist() for _ in range(seeds)]
    return gold.tolist(), preds


def _tags(rng, n, seeds):
    gold = [[TAGS[i] for i in rng.integers(0, len(TAGS), rng.integers(1, 9))] for _ in range(n)]
    preds = [
        [[t if rng.random() < 0.7 else TAGS[rng.integers(0, len(TAGS))] for t in s] for s in gold]
        for _ in range(seeds)
    ]
    return gold, preds


CASES = [
    ("sst2", "accuracy"),
    ("mnli", "accuracy"),
    ("mrpc", "f1"),
    ("cola", "matthews"),
    ("mnli", "matthews"),
    ("mnli", "macro_f1"),
    ("sst2", "macro_f1"),
    ("stsb", "pearson"),
    ("stsb", "spearman"),
    ("conll2003", "span_f1"),
    ("conll2003", "precision"),
    ("conll2003", "recall"),
]


def _case(task, n, seeds, seed=0):
    rng = np.random.default_rng(seed)
    kind = get_task(task).kind
    if kind == "regression":
        return _scores(rng, n, seeds)
    if kind == "tagging":
        return _tags(rng, n, seeds)
    return _labels(rng, task, n, seeds)


def _evaluate(task, metric, gold, pred):
    """tasks.evaluate's value of `metric` (mnli's matthews: tasks.matthews_corrcoef, K = 3;
    macro-F1, a user task's metric: tasks.metrics.macro_f1)."""
    if metric == "macro_f1":
        from snowfire.tasks import macro_f1

        return macro_f1(gold, pred)
    if metric == "matthews" and task != "cola":
        from snowfire.tasks import matthews_corrcoef

        return matthews_corrcoef(gold, pred)
    return evaluate(task, gold, pred)[metric]


@pytest.mark.parametrize(("task", "metric"), CASES)
def test_each_resampled_score_is_the_metric_of_the_resample_built_out(task, metric):
    gold, preds = _case(task, 120, 3)
    rng = np.random.default_rng(1)
    draws = [rng.integers(0, len(gold), len(gold)) for _ in range(6)]
    counts = np.stack([np.bincount(d, minlength=len(gold)) for d in draws])  # (6, N)
    got = resampled_scores(metric, gold, preds, counts)  # (6, 3)
    for r, draw in enumerate(draws):
        for s, pred in enumerate(preds):
            want = _evaluate(task, metric, [gold[i] for i in draw], [pred[i] for i in draw])
            assert got[r, s] == pytest.approx(want, abs=TOL), (r, s)


@pytest.mark.parametrize(("task", "metric"), CASES)
def test_the_full_sample_estimate_is_the_seeds_mean_of_tasks_evaluate(task, metric):
    gold, preds = _case(task, 200, 5, seed=2)
    boot = bootstrap(metric, gold, {"snow": preds[:3], "fire": preds[3:]}, replicates=50)
    scores = [_evaluate(task, metric, gold, p) for p in preds]
    assert boot.scores["snow"] == pytest.approx(scores[:3], abs=TOL)
    assert boot.point["snow"] == pytest.approx(np.mean(scores[:3]), abs=TOL)
    assert boot.point["fire"] == pytest.approx(np.mean(scores[3:]), abs=TOL)
    delta = boot.interval("snow", "fire")
    assert delta.estimate == pytest.approx(np.mean(scores[3:]) - np.mean(scores[:3]), abs=TOL)
    assert delta.low <= delta.high and delta.replicates == 50 and delta.seeds == (3, 2)


def test_zero_denominators_score_zero_as_tasks_metrics_do():
    gold = [1.0, 2.0, 3.0, 4.0]
    const = [2.5, 2.5, 2.5, 2.5]  # a constant prediction: pearson 0.0, not NaN
    assert resampled_scores("pearson", gold, [const], np.ones((1, 4)))[0, 0] == 0.0
    assert evaluate("stsb", gold, const)["pearson"] == 0.0
    never = ["0"] * 4  # no positive prediction: f1 0.0
    assert resampled_scores("f1", ["1", "0", "1", "0"], [never], np.ones((1, 4)))[0, 0] == 0.0
    one_draw = np.array([[4, 0, 0, 0]])  # every copy of one example: pearson of a constant
    assert resampled_scores("pearson", gold, [[1.0, 2.0, 3.0, 5.0]], one_draw)[0, 0] == 0.0


# -- coverage on simulated cells with a known Δ -------------------------------------------------


def _phi(z: float) -> float:
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


def _accuracy_cells(rng, n, seeds, tau, mu=(0.8, 1.0), sigma=1.0):
    """Example i right for a seed when z_i + μ_side + u_seed + e_i,seed > 0: z shared by both
    sides (paired), u ~ N(0, τ²) a restart's luck, e ~ N(0, σ²); the expected accuracy of a
    restart on a random example is Φ(μ / √(1 + τ² + σ²)), so the true Δ is known."""
    z = rng.normal(size=n)
    sides = {}
    for side, m in zip(("snow", "fire"), mu, strict=True):
        sides[side] = [
            np.where(z + m + rng.normal(0, tau) + rng.normal(0, sigma, n) > 0, "1", "0").tolist()
            for _ in range(seeds)
        ]
    truth = [_phi(m / math.sqrt(1 + tau**2 + sigma**2)) for m in mu]
    return ["1"] * n, sides, truth[1] - truth[0]


def _pearson_cells(rng, n, seeds, tau, beta=(1.0, 1.2), g=0.6, sigma=0.6):
    """Prediction y = b x + g d + e, with b = β_side + v, v ~ N(0, τ²) per restart, d shared by
    both sides (paired), e ~ N(0, σ²): ρ(b) = b / √(b² + g² + σ²), and the true Δ is
    E_v ρ(β_fire + v) − E_v ρ(β_snow + v) (Gauss-Hermite, 40 nodes)."""
    x, d = rng.normal(size=n), rng.normal(size=n)
    sides = {}
    for side, b in zip(("snow", "fire"), beta, strict=True):
        sides[side] = [
            ((b + rng.normal(0, tau)) * x + g * d + rng.normal(0, sigma, n)).tolist()
            for _ in range(seeds)
        ]
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    weights = weights / weights.sum()

    def rho(b):
        bb = b + tau * nodes
        return float(weights @ (bb / np.sqrt(bb**2 + g**2 + sigma**2)))

    return x.tolist(), sides, rho(beta[1]) - rho(beta[0])


@pytest.mark.parametrize(
    ("metric", "cells"), [("accuracy", _accuracy_cells), ("pearson", _pearson_cells)]
)
def test_the_95_interval_covers_the_true_delta_in_about_95_percent_of_draws(metric, cells):
    """300 simulated comparisons (300 examples, 4 seeds a side, restarts' luck about a point):
    the binomial sd of the coverage is 1.3 points, so [0.90, 0.985] holds 95% with room and is
    far from 50% and 100% (seed resampling covered 0.98-1.00 where restarts add nothing, and
    0.67-0.91 where they dominate: benchmarks/verdict_interval.py)."""
    rng = np.random.default_rng(26)
    hits, deltas = 0, []
    for rep in range(300):
        gold, sides, truth = cells(rng, 300, 4, tau=0.05)
        iv = bootstrap(metric, gold, sides, replicates=1000, seed=rep).interval("snow", "fire")
        hits += iv.low <= truth <= iv.high
        deltas.append(truth)
    coverage = hits / 300
    assert 0.90 <= coverage <= 0.985, coverage
    assert min(deltas) > 0.02  # a real difference, not a trivial Δ = 0


def test_identical_sides_give_an_interval_holding_zero():
    gold, luck = _case("sst2", 300, 3)  # seeds apart by per-example luck only: σ̂_B = 0
    same = bootstrap("accuracy", gold, {"snow": luck, "fire": luck}, replicates=2000)
    iv = same.interval("snow", "fire")
    assert iv.estimate == 0.0 and iv.low <= 0.0 <= iv.high and call(iv) == "❄️ ≈ 🔥"
    rng = np.random.default_rng(3)  # restarts at different levels (60, 70, 80% right): σ̂_B > 0
    levels = [
        [g if rng.random() < p else "0" if g == "1" else "1" for g in gold] for p in (0.6, 0.7, 0.8)
    ]
    same = bootstrap("accuracy", gold, {"snow": levels, "fire": levels}, replicates=2000)
    iv = same.interval("snow", "fire")
    assert same.restart_sd["snow"] > 0.05
    assert iv.estimate == 0.0 and iv.low < -0.01 and iv.high > 0.01 and not iv.excludes_zero
    one = bootstrap("accuracy", gold, {"snow": luck[:1], "fire": luck[:1]}, replicates=500)
    assert np.all(one.draws["snow"] == one.draws["fire"])  # paired: the same draw, Δ* = 0
    assert one.interval("snow", "fire").low == one.interval("snow", "fire").high == 0.0


def test_a_one_seed_side_carries_the_examples_noise_only():
    gold, preds = _case("sst2", 200, 4)
    boot = bootstrap("accuracy", gold, {"base": preds[:1], "side": preds[1:]}, replicates=300)
    assert boot.restart_sd["base"] is None and boot.seeds == {"base": 1, "side": 3}
    counts_only = bootstrap("accuracy", gold, {"base": preds[:1]}, replicates=300)
    assert np.array_equal(boot.draws["base"], counts_only.draws["base"])  # same counts, no t


def test_restart_variance_is_the_seeds_spread_less_the_examples_share():
    """By hand: scores per draw = a draw effect + a fixed per-seed offset d_s (no per-example
    luck: ê = 0, σ̂² = s²); then the offsets moving with the draw as pure luck (σ̂² = 0)."""
    draw = np.array([0.0, 0.01, -0.02, 0.005])[:, None]  # (R, 1)
    offsets = np.array([-0.02, 0.0, 0.05])  # (S,)
    point = 0.7 + offsets
    s2 = float(np.var(offsets, ddof=1))
    assert restart_variance(0.7 + draw + offsets, point) == pytest.approx(s2, abs=TOL)
    luck = np.array(
        [[0.02, -0.01, -0.01], [-0.02, 0.01, 0.01], [0.0, 0.03, -0.03], [0.0, -0.03, 0.03]]
    )  # (R, S), each row sums to 0
    small = np.array([0.001, -0.001, 0.0])  # a spread far under the luck's
    assert restart_variance(0.7 + luck, 0.7 + small) == 0.0


def test_the_restarts_share_is_welchs_t():
    """Step 3 alone (no example noise: every draw equal): the interval is √(v_A + v_B) times
    Student's t quantile at Welch's ν, v = σ̂²_B / S; scipy's quantile as the oracle."""
    from scipy import stats

    from snowfire.compare import Bootstrap

    r = 400_000
    boot = Bootstrap(
        point={"a": 0.7, "b": 0.75},
        scores={"a": [0.7] * 3, "b": [0.75] * 2},
        restart_sd={"a": 0.02, "b": 0.05},
        draws={"a": np.zeros(r), "b": np.zeros(r)},
        seed=4,
    )
    va, vb = 0.02**2 / 3, 0.05**2 / 2
    nu = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 1)
    half = math.sqrt(va + vb) * stats.t.ppf(0.975, nu)
    iv = boot.interval("a", "b")
    assert iv.estimate == pytest.approx(0.05)
    assert iv.low == pytest.approx(-half, rel=0.02) and iv.high == pytest.approx(half, rel=0.02)
    alone = Bootstrap(
        point={"a": 0.7, "b": 0.75},
        scores={"a": [0.7], "b": [0.75] * 2},
        restart_sd={"a": None, "b": 0.05},
        draws={"a": np.zeros(r), "b": np.zeros(r)},
    )
    one_side = 0.05 / math.sqrt(2) * stats.t.ppf(0.975, 1)  # ν = S - 1 of the side with restarts
    # Cauchy's 97.5% quantile from 400,000 draws: Monte Carlo sd ~1%
    assert alone.interval("a", "b").high == pytest.approx(one_side, rel=0.04)
    assert boot.interval("a", "b") == boot.interval("a", "b")  # its own stream: reproducible


def test_one_sides_score_interval_is_its_draws_plus_its_own_restarts():
    """`score(side)`: with no example noise, the point ± σ̂_B/√S times Student's t at S − 1
    (scipy's quantile as the oracle); with no restarts' share, the percentile interval of the
    side's draws exactly; a side never bootstrapped is refused by name."""
    from scipy import stats

    from snowfire.compare import Bootstrap

    r = 400_000
    boot = Bootstrap(
        point={"a": 0.7},
        scores={"a": [0.7] * 3},
        restart_sd={"a": 0.02},
        draws={"a": np.full(r, 0.7)},
        seed=2,
    )
    half = 0.02 / math.sqrt(3) * stats.t.ppf(0.975, 2)
    iv = boot.score("a")
    assert (iv.estimate, iv.seeds, iv.replicates) == (0.7, (0, 3), r)
    assert iv.low == pytest.approx(0.7 - half, rel=0.002)
    assert iv.high == pytest.approx(0.7 + half, rel=0.002)
    gold, preds = _case("sst2", 200, 1)
    one = bootstrap("accuracy", gold, {"a": preds}, replicates=500)
    low, high = np.quantile(one.draws["a"], [0.05, 0.95])
    assert (one.score("a", 0.9).low, one.score("a", 0.9).high) == (low, high)
    with pytest.raises(ValueError, match=r"score: no side 'b'; expected one of \['a'\]"):
        one.score("b")
    with pytest.raises(ValueError, match=r"score: expected a level in \(0, 1\), got 1.0"):
        one.score("a", 1.0)


# -- the verdict's words ------------------------------------------------------------------------


def _iv(low, high):
    return Interval((low + high) / 2, low, high, 0.95, 1000, (3, 3))


def test_call_says_which_side_only_when_the_interval_excludes_zero():
    assert call(_iv(0.001, 0.03)) == "🔥 > ❄️"
    assert call(_iv(-0.03, -0.001)) == "❄️ > 🔥"
    assert call(_iv(-0.01, 0.02)) == "❄️ ≈ 🔥"
    assert call(_iv(0.0, 0.02)) == "❄️ ≈ 🔥"  # 0 inside (at the edge): no call
    assert _iv(0.0, 0.02).to_json()["low"] == 0.0


def test_zero_training_words():
    above, below = _iv(0.01, 0.05), _iv(-0.08, 0.01)
    what = "the encoder's own similarity"
    assert zero_words(below, below, what) == f"neither adaptation beats {what} at this budget"
    assert zero_words(above, below, what) == f"only ❄️ beats {what} at this budget"
    assert zero_words(below, above, "the majority label") == (
        "only 🔥 beats the majority label at this budget"
    )
    assert zero_words(above, above, what) == f"both adaptations beat {what}"


def _mark(status):
    return Convergence(status, "", 0.8, 3.0, 3.0, 0.0, 0.0)


def test_task_verdict_budget_limited_then_zero_training_then_the_call():
    rng = np.random.default_rng(5)
    gold = rng.normal(size=1500)
    good = (gold + rng.normal(0, 0.3, 1500)).tolist()  # the untrained baseline, r ~ 0.96
    snow = [(gold + rng.normal(0, 1.0, 1500)).tolist() for _ in range(3)]  # r ~ 0.71
    fire = [(gold + rng.normal(0, 0.6, 1500)).tolist() for _ in range(3)]  # r ~ 0.86
    boot = weigh("pearson", gold.tolist(), snow, fire, baseline=good, replicates=2000)
    done = [_mark(CONVERGED)] * 3
    verdict = task_verdict(boot, done, done)
    assert verdict["verdict"] == "🔥 > ❄️" and verdict["delta"]["low"] > 0
    assert verdict["text"].startswith("🔥 > ❄️ (Δ +")
    words = BASELINE_REGRESSION = "the encoder's own similarity"
    verdict = task_verdict(boot, done, done, baseline=BASELINE_REGRESSION)
    assert verdict["verdict"] == f"neither adaptation beats {words} at this budget"
    assert verdict["baseline"]["fire_gain"]["high"] < 0  # 🔥 is below the baseline for sure
    rising = [_mark(CONVERGED), _mark(STILL_IMPROVING), _mark(CONVERGED)]
    verdict = task_verdict(boot, done, rising, baseline=BASELINE_REGRESSION)
    assert verdict["verdict"] == BUDGET_LIMITED
    shown = f"❄️ {100 * boot.point['snow']:.1f}, 🔥 {100 * boot.point['fire']:.1f}"
    assert verdict["text"] == f"{BUDGET_LIMITED} ({shown}; 🔥 seed 1 {STILL_IMPROVING})"
    one = weigh("pearson", gold.tolist(), snow, fire[:1], replicates=500)
    assert "🔥: 1 seed, its restarts' spread is not in the interval" in task_verdict(one)["notes"]
    # a side the race stopped is called, scored where it stopped: the notes say where
    why = "ended by the race at epoch 2 of 6, still rising there (compare/racing.py)"
    raced = [Convergence(RACED, why, 0.8, 2.0, 2.0, 0.1, 0.0)]
    verdict = task_verdict(one, done, raced)
    assert verdict["verdict"] == "🔥 > ❄️" and f"🔥 seed 0 {why}" in verdict["notes"]
    assert f"🔥 seed 0 {why}" in verdict["text"]


# -- errors -------------------------------------------------------------------------------------


def test_bad_input_is_refused_with_what_and_where():
    gold, preds = _case("sst2", 10, 2)
    with pytest.raises(ValueError, match=r"unknown metric 'bleu'; expected one of"):
        bootstrap("bleu", gold, {"a": preds})
    with pytest.raises(ValueError, match=r"side 'fire' seed 1: expected 10 predictions .*got 9"):
        bootstrap("accuracy", gold, {"snow": preds, "fire": [preds[0], preds[1][:9]]})
    with pytest.raises(ValueError, match=r"side 'fire': expected a list of seeds' predictions"):
        bootstrap("accuracy", gold, {"snow": preds, "fire": []})
    with pytest.raises(ValueError, match=r"expected a positive number of replicates, got 0"):
        bootstrap("accuracy", gold, {"a": preds}, replicates=0)
    with pytest.raises(ValueError, match=r"unknown scheme 'bca'"):
        bootstrap("accuracy", gold, {"a": preds}, scheme="bca")
    boot = bootstrap("accuracy", gold, {"a": preds, "b": preds}, replicates=10)
    with pytest.raises(ValueError, match=r"no side 'c'; expected one of \['a', 'b'\]"):
        boot.interval("a", "c")
    with pytest.raises(ValueError, match=r"expected a level in \(0, 1\), got 95"):
        boot.interval("a", "b", level=95)
    tags, tag_preds = _case("conll2003", 5, 1)
    tag_preds[0][3] = tag_preds[0][3] + ["O"]
    with pytest.raises(ValueError, match=r"seed 0: sentence 3: expected \d+ predicted tags"):
        bootstrap("span_f1", tags, {"a": tag_preds})
    with pytest.raises(ValueError, match=r"pearson: side 'a' seed 0: expected a flat list"):
        bootstrap("pearson", [1.0, 2.0], {"a": [[1.0, float("nan")]]})
    assert set(METRICS) >= {get_task(t).metric for t in ("conll2003", "sst2", "stsb", "cola")}
