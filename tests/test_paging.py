"""Reads in pages (cache/paging.py) by themselves: pages against a brute-force cut, the
examples a body cut at each of its bytes keeps against every byte they own, a resumed read
equal to the whole one, the page setting, and the tries that count from the last progress."""

from __future__ import annotations

import random

import numpy as np
import pytest

from snowfire.cache import ExampleBatch, ServiceUnreachableError, StoreError
from snowfire.cache.paging import (
    DEFAULT_PAGE_BYTES,
    Assembly,
    BodyCut,
    page_bytes_from_env,
    split_pages,
)
from snowfire.cache.retry import RetryPolicy, Tries
from snowfire.cache.wire import (
    body_bytes,
    encode,
    example_bytes,
    header,
    header_bound,
    parse_frame,
)

LENGTHS = [3, 1, 4, 0, 5, 2]  # tokens per example; one empty


def _batch(dtype: str, lengths=LENGTHS, layers=(2, 0), dim=4, seed=0) -> ExampleBatch:
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_tok = int(offsets[-1])
    features = rng.standard_normal((n_tok, len(layers), dim))  # (N, Lsel, D)
    scales = None
    if dtype == "int8":
        features = rng.integers(-127, 128, size=features.shape)
        scales = rng.random((n_tok, len(layers))).astype(np.float32)  # (N, Lsel)
    return ExampleBatch(
        features=features.astype(dtype),
        offsets=offsets,
        word_ids=rng.integers(-1, 6, size=n_tok).astype(np.int32),
        type_ids=rng.integers(0, 2, size=n_tok).astype(np.int8),
        pair_starts=rng.integers(-1, 3, size=len(lengths)).astype(np.int64),
        layers=list(layers),
        keys=[f"{i:032x}" for i in range(len(lengths))],
        scales=scales,
    )


def _reader(body: bytes, stop: int, how: str, rng: random.Random):
    """A read_into that hands out `body` in random pieces up to byte `stop`, then ends the
    connection (`close`: returns 0) or breaks it (`reset`: raises); at the body's end, 0."""
    at = [0]

    def read_into(view: memoryview) -> int:
        if at[0] >= stop:
            if how == "reset" and stop < len(body):
                raise ConnectionResetError("reset by peer")
            return 0
        n = min(len(view), stop - at[0], rng.randint(1, 7))
        view[:n] = body[at[0] : at[0] + n]
        at[0] += n
        return n

    return read_into


def _owned_bytes(body: bytes) -> list[set[int]]:
    """Every byte of the body each example needs, brute force from its layout: the header,
    its offsets (i, i + 1), pair start and each of its tokens' rows of every tensor."""
    frame = parse_frame(body)
    t = frame.tensors
    offsets = np.frombuffer(body, np.int64, len(LENGTHS) + 1, frame.size + t["offsets"].start)
    owned = []
    for i in range(len(offsets) - 1):
        mine = set(range(frame.size))
        for name, elements in (("offsets", [i, i + 1]), ("pair_starts", [i])):
            size = t[name].dtype.itemsize
            for e in elements:
                mine |= set(
                    range(
                        frame.size + t[name].start + e * size,
                        frame.size + t[name].start + (e + 1) * size,
                    )
                )
        for name in ("features", "word_ids", "type_ids", "scales"):
            if name not in t:
                continue
            row = t[name].dtype.itemsize * int(np.prod(t[name].shape[1:]))
            lo = frame.size + t[name].start + int(offsets[i]) * row
            mine |= set(range(lo, lo + (int(offsets[i + 1]) - int(offsets[i])) * row))
        owned.append(mine)
    return owned


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
@pytest.mark.parametrize("how", ["close", "reset"])
def test_a_body_cut_at_any_byte_keeps_exactly_the_examples_whose_bytes_all_came(dtype, how):
    batch = _batch(dtype)
    body = encode(batch, "fs")
    owned = _owned_bytes(body)
    rng = random.Random(0)
    lengths = np.array(LENGTHS)
    for stop in range(len(body)):
        out = Assembly(lengths, [2, 0], 4, dtype)
        with pytest.raises(BodyCut) as cut:
            out.receive(_reader(body, stop, how, rng), 0, len(LENGTHS), len(body))
        # brute force: the leading examples every byte of which came before the cut
        want = 0
        while want < len(owned) and max(owned[want]) < stop:
            want += 1
        assert cut.value.whole == want, stop
        assert isinstance(cut.value, ConnectionError)
        # the rest asked again (a whole body for it): the read is the whole one, byte for byte
        rest = encode(_take(batch, range(want, len(LENGTHS))), "fs")
        out.receive(_reader(rest, len(rest), how, rng), want, len(LENGTHS), len(rest))
        _assert_same(out.batch(), batch)


def _take(batch: ExampleBatch, indices) -> ExampleBatch:
    from snowfire.heads.data import take

    return take(batch, list(indices))


def _assert_same(got: ExampleBatch, want: ExampleBatch) -> None:
    for name in ("features", "offsets", "word_ids", "type_ids", "pair_starts", "scales"):
        a, b = getattr(got, name), getattr(want, name)
        if b is None:
            assert a is None, name
            continue
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
    assert (got.layers, got.keys) == (want.layers, want.keys)


def test_a_body_with_its_features_first_keeps_nothing_when_cut():
    """The order written before the index came first: decoded the same, but a cut one has
    no offsets yet, so nothing is kept."""
    from snowfire.cache.wire import _metadata, array_bytes, decode, index_tensors

    batch = _batch("float32")
    small = index_tensors(
        {n: getattr(batch, n) for n in ("offsets", "word_ids", "type_ids", "pair_starts")}
    )
    tensors = [("features", "float32", batch.features.shape)]
    tensors += [(n, a.dtype.name, a.shape) for n, a in small.items()]
    head, _ = header(tensors, _metadata("float32", batch.layers, batch.keys, "fs", None))
    body = (
        head
        + bytes(array_bytes(batch.features))
        + b"".join(bytes(array_bytes(a)) for a in small.values())
    )
    _assert_same(decode(body), batch)
    out = Assembly(np.array(LENGTHS), [2, 0], 4, "float32")
    with pytest.raises(BodyCut) as cut:
        out.receive(_reader(body, len(body) - 3, "close", random.Random(1)), 0, 6, len(body))
    assert cut.value.whole == 0


def test_a_body_that_answers_other_examples_is_refused():
    body = encode(_batch("float32"), "fs")
    rng = random.Random(2)
    other = Assembly(np.array([3, 1, 4, 1, 5, 2]), [2, 0], 4, "float32")  # one length differs
    with pytest.raises(StoreError, match=r"tensor 'features' of float32 \[15, 2, 4\], expected"):
        other.receive(_reader(body, len(body), "close", rng), 0, 6, len(body))
    moved = Assembly(np.array([3, 1, 4, 1, 4, 2]), [2, 0], 4, "float32")  # same total
    with pytest.raises(StoreError, match="its offsets differ from the lengths the service gave"):
        moved.receive(_reader(body, len(body), "close", rng), 0, 6, len(body))
    same = Assembly(np.array(LENGTHS), [2, 0], 4, "float32")
    with pytest.raises(StoreError, match=f"its header says {len(body)} bytes, its Content-Length"):
        same.receive(_reader(body, len(body), "close", rng), 0, 6, len(body) + 1)
    longer = Assembly(np.array(LENGTHS), [2, 0], 4, "float32")
    with pytest.raises(StoreError, match="longer than its header says"):
        longer.receive(_reader(body + b"x", len(body) + 1, "close", rng), 0, 6, None)
    layers = Assembly(np.array(LENGTHS), [0, 2], 4, "float32")
    with pytest.raises(StoreError, match=r"layers \[2, 0\] and 6 keys, expected layers \[0, 2\]"):
        layers.receive(_reader(body, len(body), "close", rng), 0, 6, len(body))


# ---------------------------------------------------------------- sizes and pages
@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
def test_the_example_sizes_add_up_to_the_body_within_the_header_bound(dtype):
    for seed, n in ((0, 1), (1, 7), (2, 300)):
        lengths = np.random.default_rng(seed).integers(0, 30, size=n)
        layers = list(range(25))[: 1 + seed * 12]
        batch = _batch(dtype, lengths, layers=layers, seed=seed)
        fs_id = "a-long-feature-set-id-" + "x" * 80
        sizes = example_bytes(lengths, len(layers), 4, dtype)
        assert body_bytes(batch) == 8 + int(sizes.sum())
        assert body_bytes(batch) <= len(encode(batch, fs_id))
        assert len(encode(batch, fs_id)) <= body_bytes(batch) + header_bound(fs_id, len(layers))


def _greedy(sizes: list[int], limit: int, most: int | None) -> list[tuple[int, int]]:
    """The pages one example at a time: a page takes the next example while it fits."""
    runs, lo = [], 0
    while lo < len(sizes):
        hi, total = lo + 1, sizes[lo]
        while hi < len(sizes) and total + sizes[hi] <= limit and (most is None or hi - lo < most):
            total += sizes[hi]
            hi += 1
        runs.append((lo, hi))
        lo = hi
    return runs


def test_pages_are_the_greedy_cut_one_example_at_a_time():
    rng = np.random.default_rng(0)
    for _ in range(300):
        sizes = rng.integers(0, 50, size=int(rng.integers(0, 40))).tolist()
        limit = int(rng.integers(1, 120))
        most = None if rng.random() < 0.5 else int(rng.integers(1, 6))
        assert split_pages(np.array(sizes, dtype=np.int64), limit, most) == _greedy(
            sizes, limit, most
        )


def test_the_page_bound_setting():
    assert page_bytes_from_env({}) == DEFAULT_PAGE_BYTES == 64 << 20
    assert page_bytes_from_env({"SNOWFIRE_PAGE_BYTES": " 1048576 "}) == 1 << 20
    for bad in ("1e6", "lots", "100", "-5"):
        with pytest.raises(
            ValueError, match=f"SNOWFIRE_PAGE_BYTES='{bad}': expected an integer of at least 4096"
        ):
            page_bytes_from_env({"SNOWFIRE_PAGE_BYTES": bad})
    from snowfire.cache import RemoteStore

    with pytest.raises(
        ValueError, match="page_bytes: expected an integer of at least 4096, got 10"
    ):
        RemoteStore("http://127.0.0.1:1", page_bytes=10)


# ---------------------------------------------------------------- tries and progress
class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_progress_starts_the_attempts_and_the_deadline_again():
    t = FakeTime()
    policy = RetryPolicy(attempts=3, backoff=4.0, backoff_max=4.0, deadline=10.0)
    tries = Tries(policy, "POST u", ServiceUnreachableError, clock=t.clock, sleep=t.sleep)
    for _ in range(20):  # 40 tries and 60+ s in all, never 3 in a row without progress
        tries.failed("cut")
        tries.progressed()
    assert t.now > 10.0
    tries.failed("cut")
    tries.failed("cut")
    with pytest.raises(
        ServiceUnreachableError, match=r"gave up after \d+\.\d s without progress: all 3"
    ):
        tries.failed("cut")
