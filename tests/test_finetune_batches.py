"""The batches of a 🔥 training epoch: random (pool 0, as runs made before `bucket_pool`) or
length-bucketed (AllenNLP's bucket iterator, transformers' group_by_length)."""

from __future__ import annotations

import numpy as np
import pytest

from snowfire.finetune import FinetuneConfig, epoch_batches
from snowfire.rundir.reuse import config_changes


def _lengths(n: int, seed: int = 0) -> np.ndarray:
    """Sentence-pair lengths shaped like STS-B's (a long right tail)."""
    return np.clip(np.random.default_rng(seed).lognormal(3.2, 0.45, n).astype(int), 4, 125)


def _padded(batches, lengths) -> int:
    return sum(int(lengths[b].max()) * len(b) for b in batches)


@pytest.mark.parametrize(
    "n, batch_size, pool", [(1000, 32, 50), (1000, 32, 0), (103, 8, 3), (7, 8, 50), (64, 8, 1)]
)
def test_every_example_once_in_ceil_n_over_b_batches(n, batch_size, pool):
    batches = epoch_batches(_lengths(n), batch_size, pool, seed=3, epoch=2)
    assert len(batches) == -(-n // batch_size)
    assert all(1 <= len(b) <= batch_size for b in batches)
    assert sum(len(b) < batch_size for b in batches) <= 1  # only the last pool's rest
    assert sorted(np.concatenate(batches).tolist()) == list(range(n))


def test_pool_zero_is_the_order_runs_used_before_buckets():
    """Consecutive slices of the (seed, epoch) permutation: a run saved before the field
    existed resumes with the very batches it started with."""
    batches = epoch_batches(_lengths(50), 8, 0, seed=5, epoch=3)
    order = np.random.default_rng([5, 3]).permutation(50)
    expected = [order[i : i + 8] for i in range(0, 50, 8)]
    assert [b.tolist() for b in batches] == [b.tolist() for b in expected]


def test_batches_are_a_function_of_seed_and_epoch():
    lengths = _lengths(500)
    first = epoch_batches(lengths, 32, 50, seed=1, epoch=1)
    again = epoch_batches(lengths, 32, 50, seed=1, epoch=1)
    assert [b.tolist() for b in first] == [b.tolist() for b in again]
    for other in (epoch_batches(lengths, 32, 50, 1, 2), epoch_batches(lengths, 32, 50, 2, 1)):
        assert [b.tolist() for b in other] != [b.tolist() for b in first]


def test_buckets_cut_the_padding_and_keep_each_pool_sorted():
    lengths = _lengths(5749)
    random = epoch_batches(lengths, 32, 0, seed=0, epoch=1)
    bucketed = epoch_batches(lengths, 32, 50, seed=0, epoch=1)
    waste = {
        name: 1 - lengths.sum() / _padded(b, lengths)
        for name, b in (("random", random), ("bucketed", bucketed))
    }
    assert waste["random"] > 0.3 and waste["bucketed"] < 0.1, waste
    # by hand: pool k is the k-th slice of 50 * 32 of the permutation, sorted by length
    order = np.random.default_rng([0, 1]).permutation(5749)
    for k, start in enumerate(range(0, 5749, 1600)):
        pool = order[start : start + 1600]
        mine = sorted(
            (b for b in bucketed if set(b.tolist()) <= set(pool.tolist())),
            key=lambda b: (lengths[b].min(), lengths[b].max()),
        )
        assert sum(len(b) for b in mine) == len(pool), k
        for a, b in zip(mine, mine[1:], strict=False):
            assert lengths[a].max() <= lengths[b].min()
    # the batches are shuffled, not served short to long
    means = [lengths[b].mean() for b in bucketed]
    assert abs(np.corrcoef(np.arange(len(means)), means)[0, 1]) < 0.3


def test_a_run_saved_before_bucket_pool_is_a_random_batch_run():
    """Its config lacks the field: it agrees with bucket_pool 0, never with the new default."""
    cfg = FinetuneConfig(encoder="minilm", task="stsb", data="data", out="run")
    saved = cfg.to_json()
    del saved["bucket_pool"]
    assert config_changes(saved, cfg) == {"bucket_pool": ("(not saved)", 50)}
    assert config_changes(saved, FinetuneConfig(**(cfg.to_json() | {"bucket_pool": 0}))) == {}
